"""Resources: WordPress's controller layer (``WP_REST_Controller``, ``register_rest_field``,
the schema helpers), over any storage."""
