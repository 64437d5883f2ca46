"""How Redis URLs, Flower's auth and ``verifleet serve``'s exposure are resolved,
without servers (the integration tests run them for real)."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from celery import Celery

from verifleet.orchestrator.cli import main
from verifleet.orchestrator.cli.serve import check_exposure
from verifleet.orchestrator.cli.worker import flower_command
from verifleet.schemas import ConfigError
from verifleet.store import Broker, RedisTarget, mask_password
from verifleet.workers._settings import WorkerSettings
from verifleet.workers.app import make_app


@pytest.fixture
def pem(tmp_path: Path) -> Path:
    path = tmp_path / "ca.pem"
    path.write_text("-----BEGIN CERTIFICATE-----\n")
    return path


def test_plain_url_keeps_password_and_query_and_has_no_tls() -> None:
    target = RedisTarget.parse("redis://:s3cret@h:6380/2?socket_timeout=5", env={})
    assert target.tls is None
    assert target.url == "redis://:s3cret@h:6380/2?socket_timeout=5"
    assert target.celery_settings() == {"broker_url": target.url}
    assert target.safe_url == "redis://:***@h:6380/2?socket_timeout=5"
    kwargs = target.client().connection_pool.connection_kwargs
    assert (kwargs["password"], kwargs["db"], kwargs["port"]) == ("s3cret", 2, 6380)


def test_bare_rediss_verifies_the_server_unlike_kombus_default() -> None:
    target = RedisTarget.parse("rediss://:pw@h:6379/0", env={})
    assert target.url == "rediss://:pw@h:6379/0"
    assert target.broker_use_ssl() == {
        "ssl_cert_reqs": ssl.CERT_REQUIRED,
        "ssl_check_hostname": True,
    }
    # kombu would otherwise fall back to CERT_NONE for a bare rediss:// broker URL.
    conninfo = Celery(set_as_current=False)
    conninfo.conf.update(**target.celery_settings())
    with conninfo.connection_for_write() as connection:
        assert connection.ssl == target.broker_use_ssl()
        assert connection.transport_cls == "rediss"


def test_tls_options_come_from_the_query_first_then_the_environment(pem: Path) -> None:
    key = pem.with_name("client.key")
    key.write_text("key")
    cert = pem.with_name("client.pem")
    cert.write_text("cert")
    env = {
        "VERIFLEET_REDIS_SSL_CA_CERTS": "/nonexistent/ignored-because-the-url-wins.pem",
        "VERIFLEET_REDIS_SSL_CERTFILE": str(cert),
        "VERIFLEET_REDIS_SSL_KEYFILE": str(key),
    }
    target = RedisTarget.parse(
        f"rediss://h:1/0?ssl_ca_certs={pem}&db=3&ssl_cert_reqs=optional", env=env
    )
    assert target.url == "rediss://h:1/0?db=3"
    assert target.tls == {
        "ssl_cert_reqs": "optional",
        "ssl_ca_certs": str(pem),
        "ssl_certfile": str(cert),
        "ssl_keyfile": str(key),
        "ssl_check_hostname": True,
    }
    pool = target.client().connection_pool
    assert pool.connection_kwargs["ssl_ca_certs"] == str(pem)
    assert pool.connection_class.__name__ == "SSLConnection"
    assert target.broker_use_ssl()["ssl_cert_reqs"] == ssl.CERT_OPTIONAL  # type: ignore[index]


def test_cert_reqs_none_turns_the_hostname_check_off() -> None:
    target = RedisTarget.parse("rediss://h/0?ssl_cert_reqs=CERT_NONE", env={})
    assert target.tls == {"ssl_cert_reqs": "none", "ssl_check_hostname": False}


@pytest.mark.parametrize(
    ("url", "env", "message"),
    [
        ("http://h:6379", {}, "scheme must be redis://"),
        ("redis://h/0?ssl_ca_certs=/x.pem", {}, "scheme is not rediss://"),
        ("rediss://h/0?ssl_cert_reqs=maybe", {}, "use required, optional or none"),
        ("rediss://h/0?ssl_ca_certs=/no/such.pem", {}, "no such file '/no/such.pem'"),
        ("rediss://h/0", {"VERIFLEET_REDIS_SSL_KEYFILE": __file__}, "ssl_certfile"),
        ("rediss://h/0?ssl_check_hostname=perhaps", {}, "use true or false"),
    ],
)
def test_malformed_tls_settings_are_config_errors(
    url: str, env: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        RedisTarget.parse(url, env=env)


def test_every_celery_app_gets_the_same_tls_options(
    monkeypatch: pytest.MonkeyPatch, pem: Path
) -> None:
    monkeypatch.setenv("VERIFLEET_REDIS_SSL_CA_CERTS", str(pem))
    url = "rediss://:pw@h:6379/0"
    expected = {
        "ssl_cert_reqs": ssl.CERT_REQUIRED,
        "ssl_ca_certs": str(pem),
        "ssl_check_hostname": True,
    }
    worker = make_app(WorkerSettings(redis_url=url))
    broker = Broker(url)
    for app in (worker, broker.app):
        assert app.conf.broker_url == url
        assert app.conf.broker_use_ssl == expected
    broker.close()


def test_mask_password() -> None:
    assert mask_password("redis://u:p@h:1/0") == "redis://u:***@h:1/0"
    assert mask_password("redis://h:1/0") == "redis://h:1/0"
    assert mask_password("rediss://:p@[::1]:1/0?x=1") == "rediss://:***@[::1]:1/0?x=1"


def _flower(
    url: str, basic_auth: str | None, environ: dict[str, str], *, no_auth: bool = False
) -> tuple[list[str], dict[str, str]]:
    return flower_command(
        url,
        port=5555,
        address="0.0.0.0",
        max_tasks=100,
        basic_auth=basic_auth,
        no_auth=no_auth,
        environ=environ,
    )


def test_flower_refuses_to_start_without_auth_unless_asked() -> None:
    with pytest.raises(ConfigError, match=r"--basic-auth USER:PASSWORD .* or pass --no-auth"):
        _flower("redis://h/0", None, {})
    with pytest.raises(ConfigError, match="no user or no password"):
        _flower("redis://h/0", "admin:", {})
    argv, env = _flower("redis://:pw@h/0", None, {"FLOWER_BASIC_AUTH": "stale:x"}, no_auth=True)
    assert "FLOWER_BASIC_AUTH" not in env
    assert env["VERIFLEET_REDIS_URL"] == "redis://:pw@h/0"
    assert not any("pw" in arg for arg in argv)  # the broker password stays out of ps
    argv, env = _flower("redis://h/0", "admin:s3cret,ops:other", {})
    assert env["FLOWER_BASIC_AUTH"] == "admin:s3cret,ops:other"
    assert not any("s3cret" in arg for arg in argv)
    oauth = {"FLOWER_AUTH": ".*@example.org", "FLOWER_AUTH_PROVIDER": "github"}
    _argv, env = _flower("redis://h/0", None, oauth)
    assert env["FLOWER_AUTH"] == oauth["FLOWER_AUTH"]


def test_cli_flower_without_auth_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("VERIFLEET_FLOWER_AUTH", "FLOWER_BASIC_AUTH", "FLOWER_AUTH"):
        monkeypatch.delenv(name, raising=False)
    assert main(["flower", "--redis", "redis://127.0.0.1:1/0"]) == 2
    assert "pass --no-auth to run it open on purpose" in capsys.readouterr().err


def test_serve_refuses_open_non_loopback_binds() -> None:
    with pytest.raises(ConfigError, match="VERIFLEET_SERVE_TOKEN"):
        check_exposure("0.0.0.0", None, insecure_no_auth=False)
    with pytest.raises(ConfigError, match="is empty"):
        check_exposure("0.0.0.0", "  ", insecure_no_auth=False)
    check_exposure("0.0.0.0", "t0ken", insecure_no_auth=False)
    check_exposure("0.0.0.0", None, insecure_no_auth=True)
    check_exposure("127.0.0.1", None, insecure_no_auth=False)


def test_cli_serve_refuses_an_open_public_bind_before_loading_anything(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("VERIFLEET_SERVE_TOKEN", raising=False)
    # The benchmark does not exist: the bind is refused before it would be read.
    assert main(["serve", "missing.yaml", "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert "refusing to serve on 0.0.0.0 without authentication" in err
    assert "--insecure-no-auth" in err
