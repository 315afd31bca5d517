"""Shared pieces of the svcrest benchmarks: the bench venv, servers, wrk, tables, machine info.

Nothing here is imported by svcrest itself. The scripts in this folder (``run.py``,
``scaling.py``, ``internal.py``) call :func:`ensure_env` first: outside the bench venv it
creates ``bench/.env`` (the peers plus svcrest from the repository in editable mode), installs
``wrk`` when a script needs it, and re-executes the script inside that venv.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
ENV_DIR = BENCH_DIR / ".env"
TARGETS_DIR = BENCH_DIR / "targets"
OUT_DIR = BENCH_DIR / "out"
LOG_DIR = OUT_DIR / "logs"

# What the bench venv holds besides svcrest itself (installed with ``pip install -e REPO``).
REQUIREMENTS = (
    "starlette",
    "falcon",
    "fastapi",
    "uvicorn[standard]",
    "granian",
    "httpx",
    "orjson",
)
# Versions printed in every table header.
VERSIONED_PACKAGES = (
    "svcrest",
    "uvicorn",
    "granian",
    "httptools",
    "uvloop",
    "starlette",
    "falcon",
    "fastapi",
    "pydantic",
    "orjson",
)
_STAMP = ENV_DIR / ".bench-installed"
_REEXEC_FLAG = "SVCREST_BENCH_IN_ENV"


# --------------------------------------------------------------------------- environment


def _env_python() -> Path:
    return ENV_DIR / "bin" / "python"


def _in_bench_env() -> bool:
    try:
        return Path(sys.prefix).resolve() == ENV_DIR.resolve()
    except OSError:
        return False


def _stamp_text() -> str:
    pyproject = REPO_DIR / "pyproject.toml"
    digest = hashlib.sha256(pyproject.read_bytes()).hexdigest() if pyproject.exists() else ""
    return json.dumps({"requirements": REQUIREMENTS, "pyproject": digest})


def _run_quiet(cmd: Sequence[str | os.PathLike[str]], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        sys.exit(f"bench: {what} failed (exit {proc.returncode}): {' '.join(map(str, cmd))}")


def _install_env() -> None:
    if not _env_python().exists():
        print(f"bench: creating the bench venv in {ENV_DIR}", flush=True)
        _run_quiet([sys.executable, "-m", "venv", ENV_DIR], "creating the venv")
    if _STAMP.exists() and _STAMP.read_text() == _stamp_text():
        return
    print("bench: installing the peers and svcrest (editable) into the bench venv", flush=True)
    pip = [str(_env_python()), "-m", "pip", "--disable-pip-version-check", "-q"]
    _run_quiet([*pip, "install", "--upgrade", "pip"], "upgrading pip")
    _run_quiet([*pip, "install", *REQUIREMENTS, "-e", REPO_DIR], "pip install")
    _STAMP.write_text(_stamp_text())


def _install_wrk() -> None:
    if shutil.which("wrk"):
        return
    apt = shutil.which("apt-get")
    if apt is None:
        sys.exit("bench: wrk is not installed and apt-get is not available; install wrk first")
    prefix: list[str] = []
    if os.geteuid() != 0:
        sudo = shutil.which("sudo")
        if sudo is None:
            sys.exit("bench: wrk is missing; install it as root: apt-get install -y wrk")
        prefix = [sudo, "-n"]
    print("bench: installing wrk with apt-get", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = [*prefix, apt, "install", "-y", "-q", "wrk"]
    if subprocess.run(install, capture_output=True, env=env, check=False).returncode != 0:
        subprocess.run([*prefix, apt, "update", "-q"], capture_output=True, env=env, check=False)
        proc = subprocess.run(install, capture_output=True, text=True, env=env, check=False)
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr[-2000:])
            sys.exit("bench: could not install wrk with apt-get; install it (apt-get install wrk)")
    if not shutil.which("wrk"):
        sys.exit("bench: apt-get finished but wrk is still not on PATH")


def ensure_env(script: str, *, need_wrk: bool) -> None:
    """Make sure this process runs inside ``bench/.env``; re-exec ``script`` there if not."""
    if need_wrk:
        _install_wrk()
    if _in_bench_env():
        return
    if os.environ.get(_REEXEC_FLAG):
        sys.exit(f"bench: re-exec did not land in {ENV_DIR} (sys.prefix={sys.prefix})")
    _install_env()
    python = str(_env_python())
    os.environ[_REEXEC_FLAG] = "1"
    sys.stdout.flush()
    os.execv(python, [python, str(Path(script).resolve()), *sys.argv[1:]])


def svcrest_import_error() -> str | None:
    """None when ``from svcrest import App`` works in a fresh interpreter, else the reason."""
    code = "from svcrest import App; App"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    if proc.returncode == 0:
        return None
    lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
    return lines[-1] if lines else f"exit {proc.returncode}"


# --------------------------------------------------------------------------- CPUs


@dataclass(frozen=True)
class Cpus:
    """Which core the server (and in-process benchmarks) and wrk run on."""

    server: int | None
    load: int | None

    def pin(self, cpu: int | None, cmd: Sequence[str]) -> list[str]:
        if cpu is None or shutil.which("taskset") is None:
            return list(cmd)
        return ["taskset", "-c", str(cpu), *cmd]

    def describe(self) -> str:
        if self.server is None or shutil.which("taskset") is None:
            return "not pinned (fewer than 2 usable CPUs or no taskset)"
        return f"server on CPU {self.server}, wrk on CPU {self.load}"


def pick_cpus() -> Cpus:
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        print("bench: fewer than 2 CPUs: server and wrk share the CPU; figures are rough")
        return Cpus(None, None)
    return Cpus(cpus[0], cpus[1])


# --------------------------------------------------------------------------- servers


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _last_line(path: Path) -> str:
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    shown = path.relative_to(REPO_DIR) if path.is_relative_to(REPO_DIR) else path
    return f"{lines[-1].strip() if lines else 'no output'} (log: {shown})"


class ServerError(RuntimeError):
    """A target server did not start or did not answer as expected."""


@dataclass(frozen=True)
class Server:
    """A running target: its base URL and the pid of its (single) uvicorn process."""

    url: str
    pid: int


def uvicorn_command(target: str, port: int, interface: str = "asgi") -> list[str]:
    """uvicorn serving ``target`` (``module:attribute`` in ``targets/``), one worker."""
    return [
        sys.executable,
        "-m",
        "uvicorn",
        target,
        "--app-dir",
        str(TARGETS_DIR),
        "--interface",
        "asgi3" if interface == "asgi" else interface,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
        "--http",
        "httptools",
        "--loop",
        "uvloop",
        "--no-access-log",
        "--log-level",
        "warning",
    ]


#: Python threads of granian's WSGI interface: svcrest's launcher default
#: (``svcrest.serve.launcher.GRANIAN_WSGI_THREADS``), so the figure is the one it serves.
GRANIAN_WSGI_THREADS = 8


def granian_command(target: str, port: int, interface: str = "asgi") -> list[str]:
    """granian serving ``target`` (``module:attribute`` in ``targets/``), one worker."""
    cmd = [
        sys.executable,
        "-m",
        "granian",
        "--interface",
        interface,
        "--working-dir",
        str(TARGETS_DIR),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
        "--no-access-log",
        "--log-level",
        "warning",
    ]
    if interface == "wsgi":
        cmd += ["--blocking-threads", str(GRANIAN_WSGI_THREADS)]
    return [*cmd, target]


SERVER_COMMANDS = {"uvicorn": uvicorn_command, "granian": granian_command}
#: A target's environment may add options to its server's command line (``ab.py --a-env
#: SVCREST_BENCH_SERVER_ARGS="--access-log"``), after those above: the last one of a
#: ``--x / --no-x`` pair is the one the server takes.
ENV_SERVER_ARGS = "SVCREST_BENCH_SERVER_ARGS"


def server_command(
    server: str, target: str, port: int, interface: str, env: Mapping[str, str] | None = None
) -> list[str]:
    """The command of ``server`` serving ``target``, with the options of ``env``'s
    :data:`ENV_SERVER_ARGS` added."""
    command = SERVER_COMMANDS[server](target, port, interface)
    extra = (env or {}).get(ENV_SERVER_ARGS, "")
    return [*command, *shlex.split(extra)]


@contextlib.contextmanager
def uvicorn_server(
    module: str,
    *,
    label: str,
    cpus: Cpus,
    env: Mapping[str, str] | None = None,
    server: str = "uvicorn",
    interface: str = "asgi",
    attribute: str = "app",
    wrap: Sequence[str] = (),
) -> Iterator[Server]:
    """Run ``module:attribute`` under ``server`` (uvicorn or granian, pinned to the server
    CPU) on ``interface``, its command after ``wrap`` (a tool that runs it in the same
    process, such as valgrind); yield where it listens."""
    port = free_port()
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    log_path = LOG_DIR / f"{label}.log"
    command = server_command(server, f"{module}:{attribute}", port, interface, env)
    cmd = cpus.pin(cpus.server, [*wrap, *command])
    full_env = {**os.environ, "SVCREST_BENCH_HOME": f"http://127.0.0.1:{port}", **(env or {})}
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, env=full_env, start_new_session=True
        )
    try:
        _wait_for_port(port, proc, log_path)
        # taskset execs the server; uvicorn with one worker has no supervisor, granian runs
        # one worker process under its own: the CPU figures add up the whole process tree.
        yield Server(f"http://127.0.0.1:{port}", proc.pid)
    finally:
        stop(proc)


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServerError(f"server exited ({proc.returncode}): {_last_line(log_path)}")
        with socket.socket() as sock:
            sock.settimeout(0.2)
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise ServerError(f"server did not listen on port {port} within 120 s")


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop a server started in its own session: SIGTERM to its group, SIGKILL if it lingers."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


#: The user the authenticated targets create and the benchmarks log in as.
AUTH_LOGIN = "bench"
AUTH_PASSWORD = "bench-password-0123"
COOKIE_NAME = "svc_logged_in"


def login(base_url: str) -> dict[str, str]:
    """Log in through the running server; the headers that make wrk's requests authenticated."""
    import httpx

    with httpx.Client(base_url=base_url, timeout=60) as client:
        resp = client.post("/login", data={"log": AUTH_LOGIN, "pwd": AUTH_PASSWORD})
        if resp.status_code >= 400:
            raise ServerError(f"POST /login answered {resp.status_code}")
        cookies = {cookie.name: cookie.value for cookie in client.cookies.jar}
        if COOKIE_NAME not in cookies:
            raise ServerError(f"POST /login set no {COOKIE_NAME} cookie")
        resp = client.get("/auth/nonce")
        if resp.status_code != 200:
            raise ServerError(f"GET /auth/nonce answered {resp.status_code}")
        nonce = resp.json().get("nonce")
        if not isinstance(nonce, str):
            raise ServerError(f"GET /auth/nonce gave no nonce: {resp.text[:200]}")
    cookie = "; ".join(f"{name}={value}" for name, value in cookies.items())
    return {"Cookie": cookie, "X-SVC-Nonce": nonce}


def check_response(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    status: int = 200,
    json_subset: Mapping[str, object] | None = None,
    body: bytes = b"",
) -> None:
    """One request with httpx before measuring: the target must answer what we expect.

    ``json_subset``: keys and values the JSON object in the body must hold. With ``body``,
    a POST of that JSON body instead of a GET.
    """
    import httpx

    try:
        if body:
            sent = {**(headers or {}), "Content-Type": "application/json"}
            resp = httpx.post(url, headers=sent, content=body, timeout=60)
        else:
            resp = httpx.get(url, headers=dict(headers or {}), timeout=60)
    except httpx.HTTPError as exc:
        raise ServerError(f"GET {url} failed: {exc!r}") from exc
    if resp.status_code != status:
        raise ServerError(f"GET {url} answered {resp.status_code}, not {status}: {resp.text[:200]}")
    if json_subset is None:
        return
    try:
        body = resp.json()
    except ValueError as exc:
        raise ServerError(f"GET {url} did not answer JSON: {resp.text[:200]}") from exc
    if not isinstance(body, dict) or any(body.get(k) != v for k, v in json_subset.items()):
        raise ServerError(f"GET {url} answered {body!r}, expected it to hold {json_subset!r}")


# --------------------------------------------------------------------------- wrk


@dataclass
class WrkResult:
    """One wrk measurement."""

    rps: float
    p50_ms: float
    p99_ms: float
    requests: int
    non_2xx: int = 0
    socket_errors: str = ""
    # CPU seconds the server used per wall-clock second of the measurement (1.0: a full core).
    server_cpu: float | None = None

    @property
    def per_cpu_second(self) -> float | None:
        """Requests per CPU second of the server: steadier than req/s on a busy machine."""
        if not self.server_cpu:
            return None
        return self.rps / self.server_cpu


# Rounds of one target further apart than this (relative to the best) get a note.
NOISY_SPREAD = 0.15
# A saturated server using less of its CPU than this shared it with something else.
BUSY_CPU = 0.9

_UNIT_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0, "h": 3600000.0}


def _latency_ms(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m|h)", text.strip())
    if not match:
        raise ValueError(f"cannot parse wrk latency {text!r}")
    return float(match.group(1)) * _UNIT_MS[match.group(2)]


def parse_wrk(output: str) -> WrkResult:
    """Requests/s, p50, p99 (ms), request count, non-2xx count and socket errors."""
    rps = re.search(r"^Requests/sec:\s+([\d.]+)", output, re.M)
    p50 = re.search(r"^\s+50%\s+(\S+)", output, re.M)
    p99 = re.search(r"^\s+99%\s+(\S+)", output, re.M)
    total = re.search(r"^\s+(\d+) requests in", output, re.M)
    if not (rps and p50 and p99 and total):
        raise ValueError(f"cannot parse wrk output:\n{output}")
    non_2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", output)
    errors = re.search(r"Socket errors:\s+(.*)$", output, re.M)
    nonzero = []
    if errors:
        for kind, count in re.findall(r"(\w+) (\d+)", errors.group(1)):
            if int(count):
                nonzero.append(f"{kind} {count}")
    return WrkResult(
        rps=float(rps.group(1)),
        p50_ms=_latency_ms(p50.group(1)),
        p99_ms=_latency_ms(p99.group(1)),
        requests=int(total.group(1)),
        non_2xx=int(non_2xx.group(1)) if non_2xx else 0,
        socket_errors=", ".join(nonzero),
    )


@dataclass(frozen=True)
class WrkSettings:
    """How wrk loads a target."""

    duration: int = 5
    warmup: int = 1
    connections: int = 64


def _children(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                found += [int(child) for child in (task / "children").read_text().split()]
    return found


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process and its descendants that are still running (a
    granian supervisor and its worker), from ``/proc/PID/stat``."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # the fields after the command name
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return own + sum(_cpu_seconds(child) or 0.0 for child in _children(pid))


def _post_script(body: bytes) -> Path:
    """A wrk script that POSTs ``body`` (ASCII JSON) in every request, written once per body."""
    text = body.decode("ascii")
    name = f"svcrest-bench-post-{hashlib.sha1(body).hexdigest()[:12]}.lua"
    script = Path(tempfile.gettempdir()) / name
    if not script.exists():
        lua = (
            'wrk.method = "POST"\n'
            f"wrk.body = {json.dumps(text)}\n"
            'wrk.headers["Content-Type"] = "application/json"\n'
        )
        script.write_text(lua)
    return script


def run_wrk(
    url: str,
    *,
    settings: WrkSettings,
    cpus: Cpus,
    headers: Mapping[str, str] | None = None,
    server_pid: int | None = None,
    body: bytes = b"",
) -> WrkResult:
    """Warm up for ``settings.warmup`` seconds, then measure ``settings.duration`` seconds.

    With ``body``, every request is a POST of that JSON body (a wrk script sets it).

    With ``server_pid``, also the server's CPU use during the measurement: below ~0.95 on a
    server that 64 connections keep busy, something else was using its CPU.
    """
    header_args: list[str] = []
    for name, value in (headers or {}).items():
        header_args += ["-H", f"{name}: {value}"]
    base = ["wrk", "-t1", f"-c{settings.connections}", "--latency", *header_args]
    if body:
        base += ["-s", str(_post_script(body))]
    if settings.warmup > 0:
        warm = cpus.pin(cpus.load, [*base, f"-d{settings.warmup}s", url])
        subprocess.run(warm, capture_output=True, check=False, timeout=settings.warmup + 60)
    cmd = cpus.pin(cpus.load, [*base, f"-d{settings.duration}s", url])
    cpu_before = _cpu_seconds(server_pid) if server_pid else None
    wall_before = time.monotonic()
    proc = subprocess.run(
        cmd, capture_output=True, text=True, check=False, timeout=settings.duration + 60
    )
    wall = time.monotonic() - wall_before
    cpu_after = _cpu_seconds(server_pid) if server_pid else None
    if proc.returncode != 0:
        raise ServerError(f"wrk failed ({proc.returncode}): {proc.stderr.strip()[:300]}")
    result = parse_wrk(proc.stdout)
    if cpu_before is not None and cpu_after is not None and wall > 0:
        result.server_cpu = (cpu_after - cpu_before) / wall
    return result


@dataclass
class Measured:
    """All rounds of one target; ``best`` is the round with the most requests per second."""

    name: str
    runs: list[WrkResult] = field(default_factory=list)
    skipped: str | None = None
    expected_non_2xx: bool = False

    @property
    def best(self) -> WrkResult | None:
        return max(self.runs, key=lambda r: r.rps) if self.runs else None

    def notes(self) -> str:
        if self.skipped and not self.runs:
            return f"skipped: {self.skipped}"
        notes = [f"a later round failed: {self.skipped}"] if self.skipped else []
        best = self.best
        if best and best.server_cpu is not None and best.server_cpu < BUSY_CPU:
            notes.append(f"server got only {best.server_cpu:.0%} of its CPU: a busy machine?")
        rates = [run.rps for run in self.runs]
        if len(rates) > 1 and (max(rates) - min(rates)) > NOISY_SPREAD * max(rates):
            spread = (max(rates) - min(rates)) / max(rates)
            notes.append(f"rounds differ by {spread:.0%}: a busy machine?")
        for number, run in enumerate(self.runs, 1):
            if run.socket_errors:
                notes.append(f"round {number} socket errors: {run.socket_errors}")
            if self.expected_non_2xx and run.non_2xx != run.requests:
                notes.append(f"round {number}: only {run.non_2xx} of {run.requests} non-2xx")
            if not self.expected_non_2xx and run.non_2xx:
                notes.append(f"round {number}: {run.non_2xx} non-2xx responses")
        return "; ".join(notes)


# --------------------------------------------------------------------------- output


def fmt_rps(value: float) -> str:
    return f"{value:,.0f}"


def fmt_ms(value: float) -> str:
    return f"{value:.2f} ms"


def cpu_cells(run: WrkResult) -> list[str]:
    """The "server CPU" and "req/CPU-s" cells of a run."""
    if run.server_cpu is None or run.per_cpu_second is None:
        return ["-", "-"]
    return [f"{run.server_cpu:.0%}", fmt_rps(run.per_cpu_second)]


def fmt_ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def markdown_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], *, left: Sequence[str] = ()
) -> str:
    """A Markdown table; the first column and the ``left`` ones left-aligned, others right."""
    aligns = ["---" if i == 0 or name in left else "---:" for i, name in enumerate(header)]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(aligns) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def _versions() -> str:
    from importlib import metadata

    parts = []
    for name in VERSIONED_PACKAGES:
        try:
            parts.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            parts.append(f"{name} (not installed)")
    return ", ".join(parts)


def _wrk_version() -> str:
    if not shutil.which("wrk"):
        return "wrk not installed"
    proc = subprocess.run(["wrk", "-v"], capture_output=True, text=True, check=False)
    first = (proc.stdout or proc.stderr).strip().splitlines()
    return first[0].split(" Copyright")[0] if first else "wrk (unknown version)"


def _loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def machine_info(cpus: Cpus, settings: WrkSettings | None = None, rounds: int = 2) -> str:
    """A Markdown bullet list: date, CPU, kernel, Python, package versions, load settings."""
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"- date: {now}",
        f"- CPU: {_cpu_model()} ({os.cpu_count()} logical CPUs); {cpus.describe()}",
        f"- OS: {platform.platform()}",
        f"- Python {platform.python_version()} ({platform.python_implementation()})",
        f"- packages: {_versions()}",
        f"- load generator: {_wrk_version()}",
        f"- load average when the run started: {_loadavg()}",
    ]
    if settings is not None:
        lines.append(
            f"- wrk -t1 -c{settings.connections}, {settings.warmup} s warm-up then "
            f"{settings.duration} s measured, {rounds} interleaved rounds per target; "
            "uvicorn --workers 1 --http httptools --loop uvloop --no-access-log; granian "
            f"--workers 1 --no-access-log (WSGI: --blocking-threads {GRANIAN_WSGI_THREADS})"
        )
    return "\n".join(lines)


def child_python_json(args: Sequence[str], *, cpus: Cpus, timeout: float = 300) -> object:
    """Run ``python ARGS`` pinned to the server CPU and parse the JSON it prints last."""
    cmd = cpus.pin(cpus.server, [sys.executable, *args])
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=timeout)
    if proc.returncode != 0:
        lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
        raise ServerError(lines[-1] if lines else f"exit {proc.returncode}")
    return json.loads(proc.stdout.strip().splitlines()[-1])
