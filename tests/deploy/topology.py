"""The production topology of docs/deploy.md, stood up on one machine for the deploy suite.

- PostgreSQL: a throwaway cluster of its own (``scripts/pg-throwaway.sh start``), not
  the test run's database, so a test may restart it.
- Two console hosts: gunicorn with the project's ``deploy/gunicorn.conf.py``, each with
  its own data folder; shared between them are the database, the secret key and the
  artifact and routed-run folders (docs/deploy.md says why each).
- nginx terminating TLS with a certificate made here by openssl, from the project's
  ``deploy/nginx/conduit.conf`` (rendered, not copied), plus one listener per host
  that reaches that host alone, so a test can say which host answers. Its master runs
  unprivileged (as ``nobody`` when the suite runs as root), with its prefix, pid,
  logs and temporary folders in a temporary folder.
- The simulated runtime, ``manage.py simulate``, as its own process.

Every process gets the production settings (``CONDUIT_PRODUCTION=true``,
``conduit.settings``), never the test settings. Ports are free ones picked at start
(``CONDUIT_DEPLOY_PORTS=LOW-HIGH`` keeps them in a range), so two runs can share a
machine.
"""

from __future__ import annotations

import http.client
import os
import random
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.browser import CHROMIUM

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
BIN = Path(sys.executable).parent
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
OPENSSL = shutil.which("openssl") or "/usr/bin/openssl"
PG_SCRIPT = REPO / "scripts" / "pg-throwaway.sh"
BASH = shutil.which("bash") or "/bin/bash"
RUNUSER = shutil.which("runuser") or "/usr/sbin/runuser"
OPERATOR = "deploy-operator"
START_TIMEOUT = 60.0

_given: set[int] = set()


def free_port() -> int:
    """A port nobody listens on: from ``CONDUIT_DEPLOY_PORTS`` (``LOW-HIGH``) if set,
    else one the kernel hands out."""
    span = os.environ.get("CONDUIT_DEPLOY_PORTS", "")
    candidates = [0]
    if span:
        low, high = (int(p) for p in span.split("-"))
        candidates = random.sample(range(low, high + 1), high - low + 1)
    for port in candidates:
        if port in _given:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            port = s.getsockname()[1]
        _given.add(port)
        return port
    raise RuntimeError(f"no free port in CONDUIT_DEPLOY_PORTS={span}")


def missing_tools() -> list[str]:
    tools = {"nginx": NGINX, "openssl": OPENSSL, "chromium-headless-shell": CHROMIUM}
    missing = [name for name, path in tools.items() if not Path(path).exists()]
    if subprocess.run([BASH, str(PG_SCRIPT), "bindir"], capture_output=True).returncode:
        missing.append("postgresql")
    return missing


def _temp_dir(prefix: str) -> Path:
    """A new folder under the system's temporary folder (not pytest's, which is 0700 and
    root's: nginx's master and PostgreSQL run as other users)."""
    return Path(tempfile.mkdtemp(prefix=prefix))


def _remove(path: Path | None) -> None:
    # Only what _temp_dir made: never ".", never a folder outside the temporary one.
    if path is not None and path.is_absolute() and path.parent == Path(tempfile.gettempdir()):
        shutil.rmtree(path, ignore_errors=True)


@dataclass
class Proc:
    """A process of the topology, in its own process group, output to ``log``."""

    name: str
    log: Path
    popen: subprocess.Popen[bytes] | None = None

    def start(self, argv: list[str], env: dict[str, str]) -> None:
        with self.log.open("ab") as out:
            self.popen = subprocess.Popen(
                argv, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip

    @property
    def pid(self) -> int:
        return self.popen.pid if self.popen is not None else -1

    def signal(self, sig: int) -> None:
        if self.popen is not None and self.popen.poll() is None:
            os.killpg(self.popen.pid, sig)

    def stop(self, timeout: float = 10) -> None:
        if self.popen is None:
            return
        self.signal(signal.SIGTERM)
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            self.popen.wait(timeout)
        self.popen = None

    def kill(self) -> None:
        """SIGKILL to the whole group: the master and its workers die at once."""
        if self.popen is None:
            return
        self.signal(signal.SIGKILL)
        self.popen.wait(10)
        self.popen = None

    def tail(self, lines: int = 30) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return f"--- {self.name} ({self.log}) ---\n" + "\n".join(text.splitlines()[-lines:])


@dataclass
class Host:
    name: str
    port: int
    data_dir: Path
    proc: Proc


@dataclass
class Topology:
    root: Path
    hosts: dict[str, Host] = field(default_factory=dict)
    pinned: dict[str, int] = field(default_factory=dict)  # host name -> its own TLS port
    port: int = 0  # nginx, both hosts
    database_url: str = ""
    secret_key: str = ""
    password: str = ""
    nginx_dir: Path | None = None
    pg_dir: Path | None = None
    nginx: Proc | None = None
    simulate: Proc | None = None

    # ------------------------------------------------------------ addresses

    def url(self, path: str = "/", host: str = "") -> str:
        """The HTTPS URL of ``path`` through nginx (both hosts), or through the listener
        that reaches ``host`` alone."""
        port = self.pinned[host] if host else self.port
        return f"https://127.0.0.1:{port}{path}"

    @property
    def cert(self) -> Path:
        assert self.nginx_dir is not None
        return self.nginx_dir / "cert.pem"

    def tls(self) -> ssl.SSLContext:
        """A client context that trusts the throwaway certificate (and nothing else)."""
        return ssl.create_default_context(cafile=str(self.cert))

    def env(self, data_dir: Path) -> dict[str, str]:
        """A console process's environment: production settings, this topology's shared
        database, key and folders, ``data_dir`` as its own data folder."""
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("CONDUIT_", "CONSOLE_", "DJANGO_")) and k != "DATABASE_URL"
        }
        shared = self.root / "shared"
        env |= {
            "DJANGO_SETTINGS_MODULE": "conduit.settings",
            "CONDUIT_PRODUCTION": "true",
            "CONDUIT_SECRET_KEY": self.secret_key,
            "DATABASE_URL": self.database_url,
            "CONDUIT_DATA_DIR": str(data_dir),
            "CONDUIT_ARTIFACT_DIR": str(shared / "artifacts"),
            "CONDUIT_ROUTED_STATE_DIR": str(shared / "routed"),
            "CONDUIT_STATIC_ROOT": str(self.root / "static"),
            "CONDUIT_ALLOWED_HOSTS": "127.0.0.1,localhost",
            # nginx, on this machine, is the one proxy believed (docs/deploy.md). No
            # CONDUIT_CSRF_TRUSTED_ORIGINS: nginx passes the browser's Host, port included.
            "CONDUIT_TRUSTED_PROXIES": "127.0.0.1",
            "CONDUIT_PROXY_SSL_HEADER": "true",
            "CONDUIT_LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
        }
        return env

    def manage(self, *args: str, env: dict[str, str] | None = None) -> str:
        env = env or self.env(self.root / "admin")
        done = subprocess.run(
            [PYTHON, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True
        )
        if done.returncode:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
        return done.stdout

    # ------------------------------------------------------------ start and stop

    def start(self) -> None:
        # Data folders are private (0700), as the settings would make them anyway.
        for d in ("logs", "shared/artifacts", "shared/routed", "admin", "runtime"):
            (self.root / d).mkdir(mode=0o700, parents=True, exist_ok=True)
        self.secret_key = secrets.token_urlsafe(48)
        self.password = secrets.token_urlsafe(16)
        self._start_postgres()
        for name in ("a", "b"):
            self.hosts[name] = Host(
                name, free_port(), self.root / f"host-{name}",
                Proc(f"console host {name}", self.root / "logs" / f"host-{name}.log"),
            )  # fmt: skip
            self.pinned[name] = free_port()
        self.port = free_port()
        # Once, from the admin's folder: the schema, the static files every host serves
        # and the operator.
        self.manage("migrate", "--noinput", "-v", "0")
        self.manage("collectstatic", "--noinput", "-v", "0")
        env = self.env(self.root / "admin") | {"DJANGO_SUPERUSER_PASSWORD": self.password}
        self.manage("createsuperuser", "--noinput", "--username", OPERATOR, "--email", "", env=env)
        for name in self.hosts:
            self.start_host(name, wait=False)
        self._start_nginx()
        self.simulate = Proc("simulate", self.root / "logs" / "simulate.log")
        self.simulate.start(
            [PYTHON, "manage.py", "simulate", "--quiet", "--seed", "30"],
            self.env(self.root / "runtime"),
        )
        for name in self.hosts:
            self.wait_host(name)
        self._wait(lambda: self.status("/healthz") == 200, "nginx")

    def stop(self) -> None:
        for proc in self._procs():
            proc.stop()
        if self.pg_dir is not None:
            subprocess.run([BASH, str(PG_SCRIPT), "stop", str(self.pg_dir)], check=False)
        _remove(self.nginx_dir)

    def _procs(self) -> list[Proc]:
        procs = [self.simulate, self.nginx, *(h.proc for h in self.hosts.values())]
        return [p for p in procs if p is not None]

    def logs(self) -> str:
        return "\n".join(p.tail() for p in self._procs())

    def seed(self, kind: str, count: int) -> None:
        env = self.env(self.root / "admin")
        subprocess.run(
            [PYTHON, "-m", "tests.deploy.seed", kind, str(count)],
            cwd=REPO, env=env, check=True, capture_output=True,
        )  # fmt: skip

    # ------------------------------------------------------------ hosts

    def start_host(self, name: str, *, wait: bool = True) -> None:
        host = self.hosts[name]
        host.data_dir.mkdir(mode=0o700, exist_ok=True)
        argv = [
            str(BIN / "gunicorn"), "-c", str(REPO / "deploy" / "gunicorn.conf.py"),
            "--bind", f"127.0.0.1:{host.port}", "--workers", "1", "--no-control-socket",
            "conduit.wsgi",
        ]  # fmt: skip
        host.proc.start(argv, self.env(host.data_dir))
        if wait:
            self.wait_host(name)

    def wait_host(self, name: str) -> None:
        host = self.hosts[name]
        self._wait(lambda: _plain_status(host.port, "/healthz") == 200, host.proc.name)

    def kill_host(self, name: str) -> None:
        self.hosts[name].proc.kill()

    def host_of_pid(self, pid: int) -> str:
        """The host whose gunicorn master is ``pid`` or its parent (a worker)."""
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            parent = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            parent = -1
        for name, host in self.hosts.items():
            if host.proc.pid in (pid, parent):
                return name
        raise LookupError(f"no console host runs pid {pid}")

    # ------------------------------------------------------------ PostgreSQL

    def _start_postgres(self) -> None:
        env = dict(os.environ)
        if os.environ.get("CONDUIT_DEPLOY_PORTS"):
            env["PG_PORT"] = str(free_port())
        self.pg_dir = _temp_dir("conduit-deploy-pg-")
        done = subprocess.run(
            [BASH, str(PG_SCRIPT), "start", str(self.pg_dir)],
            env=env, capture_output=True, text=True,
        )  # fmt: skip
        if done.returncode:
            raise RuntimeError(f"PostgreSQL did not start:\n{done.stderr}")
        self.database_url = done.stdout.strip().splitlines()[-1]

    def pg_ctl(self, *args: str) -> None:
        """``pg_ctl -D <cluster> -w ARGS`` as the cluster's owner."""
        assert self.pg_dir is not None
        bindir = subprocess.run(
            [BASH, str(PG_SCRIPT), "bindir"], capture_output=True, text=True, check=True
        ).stdout.strip()
        # -l: a server started here would otherwise log to, and hold open, our pipe.
        data, log = str(self.pg_dir / "data"), str(self.pg_dir / "server.log")
        argv = [f"{bindir}/pg_ctl", "-D", data, "-l", log, "-w", *args]
        if os.getuid() == 0:
            argv = [RUNUSER, "-u", "postgres", "--", *argv]
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, timeout=120)

    # ------------------------------------------------------------ nginx

    def _start_nginx(self) -> None:
        self.nginx_dir = d = _temp_dir("conduit-deploy-nginx-")
        for sub in ("logs", "temp"):
            (d / sub).mkdir()
        key = d / "key.pem"
        subprocess.run(
            [OPENSSL, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
             "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1", "-keyout", str(key),
             "-out", str(self.cert), "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
            check=True, capture_output=True,
        )  # fmt: skip
        site = (REPO / "deploy" / "nginx" / "conduit.conf").read_text()
        servers = "\n    ".join(
            f"server 127.0.0.1:{h.port} max_fails=1 fail_timeout=10s;" for h in self.hosts.values()
        )
        values = {
            "@LISTEN@": f"127.0.0.1:{self.port}",
            "@SERVER_NAME@": "127.0.0.1",
            "@CERTIFICATE@": str(self.cert),
            "@CERTIFICATE_KEY@": str(key),
            "@CONSOLE_HOSTS@": servers,
        }
        lines = []
        for line in site.splitlines():
            if not line.lstrip().startswith("#"):  # the comments name the placeholders
                for placeholder, value in values.items():
                    line = line.replace(placeholder, value)
                assert "@" not in line, f"an unknown placeholder in nginx's site file: {line}"
            lines.append(line)
        (d / "conduit.conf").write_text("\n".join(lines) + "\n")
        (d / "nginx.conf").write_text(self._nginx_main(key))
        unprivileged = os.getuid() == 0
        if unprivileged:
            for path in [d, *d.rglob("*")]:
                shutil.chown(path, "nobody")
        prefix = f"{d}/"
        argv = [NGINX, "-p", prefix, "-e", f"{prefix}logs/error.log", "-c", f"{prefix}nginx.conf"]
        if unprivileged:
            argv = [RUNUSER, "-u", "nobody", "--", *argv]
        self.nginx = Proc("nginx", self.root / "logs" / "nginx.log")
        self.nginx.start(argv, dict(os.environ))

    def _nginx_main(self, key: Path) -> str:
        """nginx.conf around the project's site file: its own pid, logs and temporary
        folders, no daemon (the suite holds the master), and one TLS listener per host."""
        d = self.nginx_dir
        pinned = "".join(
            f"""
    server {{
        listen 127.0.0.1:{self.pinned[name]} ssl;
        ssl_certificate {self.cert};
        ssl_certificate_key {key};
        location / {{
            proxy_pass http://127.0.0.1:{host.port};
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto https;
            proxy_read_timeout 300s;
        }}
    }}"""
            for name, host in self.hosts.items()
        )
        temps = "\n".join(
            f"    {kind}_temp_path {d}/temp/{kind};"
            for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        return f"""daemon off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/logs/error.log warn;
events {{ worker_connections 512; }}
http {{
    access_log {d}/logs/access.log;
{temps}
    include {d}/conduit.conf;
{pinned}
}}
"""

    # ------------------------------------------------------------ requests

    def request(
        self, path: str, *, host: str = "", cookie: str = "", timeout: float = 30
    ) -> tuple[int, str]:
        """(status, body) of one HTTPS GET through nginx, without following redirects."""
        port = self.pinned[host] if host else self.port
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=timeout, context=self.tls())
        try:
            conn.request("GET", path, headers={"Cookie": cookie} if cookie else {})
            response = conn.getresponse()
            return response.status, response.read().decode(errors="replace")
        finally:
            conn.close()

    def status(self, path: str, *, host: str = "", cookie: str = "") -> int:
        try:
            return self.request(path, host=host, cookie=cookie)[0]
        except OSError:
            return 0

    def _wait(self, ready: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if ready():
                return
            time.sleep(0.1)
        raise RuntimeError(f"{what} did not come up within {START_TIMEOUT:.0f} s\n{self.logs()}")


def _plain_status(port: int, path: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        conn.request("GET", path)
        return conn.getresponse().status
    except OSError:
        return 0
    finally:
        conn.close()
