"""A stand-in OAuth 2.0 token endpoint (client credentials grant, RFC 6749 section 4.4) for the
OAUTHBEARER tests: it issues unsigned JWTs (``"alg": "none"``) whose ``sub`` is the client id,
which the test broker's default validator takes (ops/kafka/broker.sh, ``KAFKA_OAUTHBEARER``).
An identity provider would sign its tokens and the broker check the signature; what streamfs
does (librdkafka's OIDC client asks for a token and logs in with it) is the same."""

from __future__ import annotations

import base64
import json
import ssl
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _b64(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def unsigned_jwt(subject: str, lifetime: float = 3600.0, scope: str = "") -> str:
    """An unsigned JWT for ``subject`` that expires ``lifetime`` seconds from now."""
    now = int(time.time())
    claims = {"sub": subject, "iat": now, "exp": now + int(lifetime)}
    if scope:
        claims["scope"] = scope
    return f"{_b64({'alg': 'none'})}.{_b64(claims)}."


class TokenEndpoint:
    """Serves ``POST /token`` on 127.0.0.1 (``port``, 0: any free one) for the ``clients``
    (id: secret),
    given as HTTP Basic credentials (as librdkafka sends them) or form fields; 401 with
    ``invalid_client`` otherwise. ``requests`` counts the token requests served. With
    ``tls`` (a certificate's and its key's files) it serves HTTPS; its tokens expire
    ``lifetime`` seconds after they are issued."""

    def __init__(self, clients: dict[str, str], tls: tuple[str, str] | None = None,
                 lifetime: float = 3600.0, port: int = 0) -> None:
        self.clients, self.requests = clients, 0
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                form = dict(urllib.parse.parse_qsl(body))
                client, secret = form.get("client_id"), form.get("client_secret")
                auth = self.headers.get("Authorization", "")
                if auth.startswith("Basic "):
                    client, _, secret = base64.b64decode(auth[6:]).decode().partition(":")
                endpoint.requests += 1
                if (self.path != "/token" or form.get("grant_type") != "client_credentials"
                        or client not in endpoint.clients
                        or endpoint.clients[client] != secret):
                    self._answer(401, {"error": "invalid_client"})
                    return
                self._answer(200, {"access_token": unsigned_jwt(client, lifetime, form.get(
                    "scope", "")), "token_type": "Bearer", "expires_in": int(lifetime)})

            def _answer(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:  # quiet: the tests read their own output
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        scheme = "https" if tls else "http"
        self.url = f"{scheme}://127.0.0.1:{self._server.server_address[1]}/token"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> "TokenEndpoint":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
