"""A real redis-server with a password and, optionally, TLS only (``--port 0``), and
the certificates it needs, made in the test's directory with the ``openssl`` CLI.

The certificates: a throw-away CA, a server certificate for ``127.0.0.1`` and
``localhost`` signed by it, and a client certificate signed by it for servers
that demand one (``--tls-auth-clients yes``).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import redis

from bench._harness import free_port

__all__ = ["Certificates", "make_certificates", "secure_redis"]


@dataclass(frozen=True)
class Certificates:
    """PEM files of a test PKI."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _openssl(*args: str | Path, cwd: Path) -> None:
    subprocess.run(["openssl", *map(str, args)], cwd=cwd, check=True, capture_output=True)


def _signed(name: str, cn: str, extensions: str, ca: tuple[Path, Path], d: Path) -> None:
    key, csr, ext = d / f"{name}.key", d / f"{name}.csr", d / f"{name}.ext"
    ext.write_text(extensions)
    # EC keys: generating them takes milliseconds, RSA keys up to a second each.
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1")
    _openssl("req", *ec, "-nodes", "-keyout", key, "-out", csr, "-subj", f"/CN={cn}", cwd=d)
    _openssl(
        "x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-CAcreateserial",
        "-days", "2", "-out", d / f"{name}.crt", "-extfile", ext, cwd=d,
    )  # fmt: skip


def make_certificates(directory: Path) -> Certificates:
    """A CA, a server certificate (127.0.0.1, localhost) and a client certificate.

    Raises:
        subprocess.CalledProcessError: ``openssl`` failed.
    """
    d = directory
    d.mkdir(parents=True, exist_ok=True)
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1")
    _openssl(
        "req", "-x509", *ec, "-nodes", "-keyout", d / "ca.key", "-out", d / "ca.crt",
        "-days", "2", "-subj", "/CN=verifleet test CA", cwd=d,
    )  # fmt: skip
    ca = (d / "ca.crt", d / "ca.key")
    _signed(
        "server",
        "localhost",
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n",
        ca,
        d,
    )
    _signed("client", "verifleet-worker", "extendedKeyUsage=clientAuth\n", ca, d)
    return Certificates(
        ca=d / "ca.crt",
        server_cert=d / "server.crt",
        server_key=d / "server.key",
        client_cert=d / "client.crt",
        client_key=d / "client.key",
    )


@contextmanager
def secure_redis(workdir: Path, *, password: str, tls: Certificates | None = None) -> Iterator[str]:
    """Run redis-server with ``requirepass``; with ``tls``, on a TLS port only
    (``--port 0``) and demanding client certificates. Yields the URL clients use:
    ``redis://:PASSWORD@...`` or ``rediss://:PASSWORD@...?ssl_ca_certs=...``.

    Raises:
        RuntimeError: no ``redis-server``, or it did not answer within 20 s.
    """
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server not found (Debian package redis-server)")
    port = free_port()
    args = [binary, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    args += ["--requirepass", password, "--dir", str(workdir)]
    args += ["--logfile", str(workdir / "redis.log")]
    auth = f":{quote(password, safe='')}@127.0.0.1:{port}/0"
    if tls is None:
        args += ["--port", str(port)]
        url = f"redis://{auth}"
        probe = redis.Redis.from_url(url)
    else:
        args += ["--port", "0", "--tls-port", str(port)]
        args += ["--tls-cert-file", str(tls.server_cert), "--tls-key-file", str(tls.server_key)]
        args += ["--tls-ca-cert-file", str(tls.ca), "--tls-auth-clients", "yes"]
        url = f"rediss://{auth}?ssl_ca_certs={quote(str(tls.ca), safe='')}"
        probe = redis.Redis.from_url(
            f"rediss://{auth}",
            ssl_ca_certs=str(tls.ca),
            ssl_certfile=str(tls.client_cert),
            ssl_keyfile=str(tls.client_key),
        )
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                probe.ping()
                break
            except redis.ConnectionError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log = workdir / "redis.log"
                    text = log.read_text() if log.exists() else ""
                    raise RuntimeError(f"redis-server did not start:\n{text[-2000:]}") from None
                time.sleep(0.05)
        probe.close()
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
