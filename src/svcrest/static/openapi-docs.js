// The API docs page (/docs): Swagger UI on this site's /openapi.json, nothing loaded from
// elsewhere. A logged-in visitor's page carries the svc_rest nonce in data-nonce: every
// request "Try it out" sends gets it as X-SVC-Nonce, so the login cookie counts.
"use strict";
(function () {
  const root = document.getElementById("swagger-ui");
  const nonce = root.dataset.nonce || "";
  window.ui = SwaggerUIBundle({
    url: root.dataset.specUrl,
    domNode: root,
    deepLinking: true,
    // The online validator badge would load an image from elsewhere.
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    requestInterceptor: function (request) {
      if (nonce && request.headers && !request.headers["X-SVC-Nonce"]) {
        request.headers["X-SVC-Nonce"] = nonce;
      }
      return request;
    },
  });
})();
