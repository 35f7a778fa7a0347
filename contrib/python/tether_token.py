# SPDX-License-Identifier: Apache-2.0
"""Mints Tether protocol version 2 tokens, for app servers written in Python
(docs/PROTOCOL.md §12.3 and §12.4). Needs only Python's hashlib and PyNaCl (Debian's
python3-nacl, or `pip install pynacl`), so it is also the independent implementation the
test vectors come from (scripts/test/v2-vectors.py).

    from tether_token import channel_token, login_token
    text = channel_token(certificate=b"...", app_id="my-app", channel="room-1", uid=7,
                         expire_seconds=3600)

A token is a bearer secret: hand it to the device over TLS, and never log it.
"""
import base64
import hashlib
import os
import time

from nacl import bindings

TOKEN_VERSION = 2
TOKEN_BYTES = 251
PRIVATE_BYTES = 168
GRANT_CHANNEL = 1
GRANT_LOGIN = 2


def _personal(label: bytes) -> bytes:
    assert len(label) <= 16
    return label + bytes(16 - len(label))


def master_key(certificate: bytes) -> bytes:
    """M: unkeyed BLAKE2b-256 of the certificate, personal "tether2 cert" (§12.3)."""
    if not certificate:
        raise ValueError("the app certificate is empty")
    return hashlib.blake2b(
        certificate, digest_size=32, salt=bytes(16), person=_personal(b"tether2 cert")
    ).digest()


def kdf(master: bytes, subkey: int, size: int = 32) -> bytes:
    """libsodium's crypto_kdf_derive_from_key(size, subkey, "tether02", master), written
    out with hashlib (PyNaCl has no crypto_kdf)."""
    return hashlib.blake2b(
        b"",
        digest_size=size,
        key=master,
        salt=subkey.to_bytes(8, "little") + bytes(8),
        person=_personal(b"tether02"),
    ).digest()


def token_key(certificate: bytes) -> bytes:
    return kdf(master_key(certificate), 1)


def key_id(certificate: bytes) -> int:
    return int.from_bytes(kdf(master_key(certificate), 4, 16)[:2], "big")


def _field(value: bytes, low: int, high: int, what: str) -> bytes:
    if not low <= len(value) <= high:
        raise ValueError(f"{what} must be {low} to {high} bytes")
    return bytes([len(value)]) + value + bytes(64 - len(value))


def private_fields(secret: bytes, kind: int, app_id: bytes, name: bytes, uid: int) -> bytes:
    """P, 168 bytes, whatever the names' lengths (§12.4)."""
    high = 63 if kind == GRANT_CHANNEL else 64
    body = (
        secret
        + bytes([kind])
        + _field(app_id, 1, 64, "the app id")
        + _field(name, 1, high, "the channel name" if kind == GRANT_CHANNEL else "the user id")
        + uid.to_bytes(4, "big")
        + bytes(1)
    )
    assert len(body) == PRIVATE_BYTES
    return body


def mint(certificate: bytes, kind: int, app_id: str, name: str, uid: int, expiry: int,
         random=os.urandom) -> str:
    """The token text: "2." and the 251 binary bytes in base64url without padding.
    `expiry` is unix seconds (0: never); `random(n)` gives n random bytes."""
    if kind == GRANT_LOGIN and uid != 0:
        raise ValueError("a login token has no uid")
    if not 0 <= uid < 2**32 or not 0 <= expiry < 2**64:
        raise ValueError("uid or expiry out of range")
    secret = random(32)
    nonce = random(24)
    public = bytes([TOKEN_VERSION]) + key_id(certificate).to_bytes(2, "big") + expiry.to_bytes(8, "big")
    sealed = bindings.crypto_aead_xchacha20poly1305_ietf_encrypt(
        private_fields(secret, kind, app_id.encode(), name.encode(), uid),
        public,
        nonce,
        token_key(certificate),
    )
    binary = public + secret + nonce + sealed
    assert len(binary) == TOKEN_BYTES
    return "2." + base64.urlsafe_b64encode(binary).rstrip(b"=").decode()


def channel_token(certificate: bytes, app_id: str, channel: str, uid: int,
                  expire_seconds: int, now=None) -> str:
    """A token to join `channel` as `uid` (0: any uid), valid `expire_seconds` from now
    (0: never expires)."""
    expiry = 0 if expire_seconds == 0 else int(now if now is not None else time.time()) + expire_seconds
    return mint(certificate, GRANT_CHANNEL, app_id, channel, uid, expiry)


def login_token(certificate: bytes, app_id: str, user_id: str, expire_seconds: int,
                now=None) -> str:
    """A token to log `user_id` in, valid `expire_seconds` from now (0: never expires)."""
    expiry = 0 if expire_seconds == 0 else int(now if now is not None else time.time()) + expire_seconds
    return mint(certificate, GRANT_LOGIN, app_id, user_id, 0, expiry)
