from django.test import RequestFactory

from workbench.client_address import client_address


def _request(remote="10.0.0.1", forwarded=None):
    extra = {"REMOTE_ADDR": remote}
    if forwarded is not None:
        extra["HTTP_X_FORWARDED_FOR"] = forwarded
    return RequestFactory().get("/", **extra)


def test_without_trusted_hops_forwarded_for_is_ignored(settings):
    settings.TRUSTED_PROXY_HOPS = 0
    assert client_address(_request(forwarded="1.2.3.4")) == "10.0.0.1"


def test_the_nth_entry_from_the_right_is_the_client(settings):
    settings.TRUSTED_PROXY_HOPS = 2
    request = _request(forwarded="6.6.6.6, 198.51.100.4, 10.0.0.2")
    assert client_address(request) == "198.51.100.4"


def test_a_short_or_malformed_header_falls_back_to_the_peer(settings):
    settings.TRUSTED_PROXY_HOPS = 2
    assert client_address(_request(forwarded="198.51.100.4")) == "10.0.0.1"
    assert client_address(_request(forwarded="evil, 10.0.0.2")) == "10.0.0.1"
    assert client_address(_request(forwarded=None)) == "10.0.0.1"
