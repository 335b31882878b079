"""A fake OpenID Connect provider on a loopback port (threaded http.server): /authorize (redirects back with a
code for the user the test names), /token (checks the client secret, the redirect URI and PKCE; answers an
RS256-signed ID token with the nonce), /userinfo (Bearer access token) and /jwks. Tests set `users[email]` to
the claims that user gets, and may make the provider misbehave (`aud`, `sign_with_other_key`, `down`)."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlparse

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

CLIENT_ID, CLIENT_SECRET, KID = "groundwork-test", "test-secret", "test-key-1"


class FakeOIDC:
    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.users: dict[str, dict] = {}
        self.codes: dict[str, dict] = {}
        self.tokens: dict[str, dict] = {}
        self.aud = CLIENT_ID
        self.sign_with_other_key = False
        self.groups_in = "userinfo"  # or "id_token"
        self.base = ""

    @property
    def issuer(self) -> str:
        return self.base

    def jwks(self) -> dict:
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [{**jwk, "kid": KID, "alg": "RS256", "use": "sig"}]}

    def authorize(self, params: dict) -> str:
        """The user `login` signs in at the IdP: a code for them, back to the client's redirect URI."""
        code = secrets.token_urlsafe(16)
        self.codes[code] = {"email": params["login"], "nonce": params.get("nonce"),
                            "redirect_uri": params["redirect_uri"], "challenge": params.get("code_challenge")}
        return f"{params['redirect_uri']}?{urlencode({'code': code, 'state': params['state']})}"

    def token(self, form: dict) -> tuple[int, dict]:
        grant = self.codes.pop(form.get("code", ""), None)
        if grant is None or form.get("client_secret") != CLIENT_SECRET or form.get("client_id") != CLIENT_ID \
                or form.get("redirect_uri") != grant["redirect_uri"]:
            return 400, {"error": "invalid_grant"}
        if grant["challenge"]:
            verifier = form.get("code_verifier", "").encode()
            challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=").decode()
            if challenge != grant["challenge"]:
                return 400, {"error": "invalid_grant", "error_description": "PKCE"}
        claims = dict(self.users[grant["email"]])
        access = secrets.token_urlsafe(16)
        self.tokens[access] = claims
        now = int(time.time())
        id_claims = {"iss": self.issuer, "sub": claims["email"], "aud": self.aud, "iat": now, "exp": now + 300,
                     "nonce": grant["nonce"], "email": claims["email"]}
        if self.groups_in == "id_token" and "groups" in claims:
            id_claims["groups"] = claims["groups"]
        key = self.other_key if self.sign_with_other_key else self.key
        id_token = jwt.encode(id_claims, key, algorithm="RS256", headers={"kid": KID})
        return 200, {"access_token": access, "token_type": "Bearer", "expires_in": 300, "id_token": id_token}

    def userinfo(self, authorization: str) -> tuple[int, dict]:
        claims = self.tokens.get(authorization.removeprefix("Bearer ").strip())
        if claims is None:
            return 401, {"error": "invalid_token"}
        if self.groups_in != "userinfo":
            claims = {k: v for k, v in claims.items() if k != "groups"}
        return 200, {"sub": claims["email"], **claims}


def serve(fake: FakeOIDC) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self, status: int, payload: dict | None = None, location: str | None = None) -> None:
            data = json.dumps(payload or {}).encode()
            self.send_response(status)
            if location:
                self.send_header("Location", location)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):  # noqa: N802 - http.server's name
            url = urlparse(self.path)
            params = {k: v[0] for k, v in parse_qs(url.query).items()}
            if url.path == "/authorize":
                self._answer(302, location=fake.authorize(params))
            elif url.path == "/jwks":
                self._answer(200, fake.jwks())
            elif url.path == "/userinfo":
                self._answer(*fake.userinfo(self.headers.get("Authorization", "")))
            else:
                self._answer(404)

        def do_POST(self):  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
            if urlparse(self.path).path == "/token":
                self._answer(*fake.token(form))
            else:
                self._answer(404)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.base = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
