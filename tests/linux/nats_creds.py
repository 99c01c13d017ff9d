#!/usr/bin/env python3
"""nats_creds.py - a throwaway NATS operator, its accounts and users, made
at test time for tests/linux/cluster_auth_test.sh (there is no nsc here).

  nats_creds.py DIR

writes into DIR (mode 0600 files):
  server.conf     the nats-server 2.9 operator-mode block: `operator` (the
                  operator JWT inline), `system_account`, `resolver:
                  MEMORY` and `resolver_preload` with the system account
                  and the PX account (JetStream enabled, no limits)
  server-nopx.conf  the same without the PX account (its users refused)
  worker.creds    a user of the PX account: its JWT and NKey seed
  stranger.creds  a well-formed user of an account the server does not
                  know (signed by a key of no preloaded account)

Written from the NKeys and JWT v2 formats (docs.nats.io, "NKeys" and
"JWTs"), with Ed25519 from python3-cryptography:
- an NKey is base32 (no padding) of a prefix byte (its type: O operator,
  A account, U user), the 32-byte public key and a CRC-16/XMODEM of
  those bytes, little-endian; a seed prefixes 'S' and the type into two
  bytes before the 32-byte private seed;
- a JWT is base64url(header).base64url(claims).base64url(signature),
  header {"typ":"JWT","alg":"ed25519-nkey"}, claims jti/iat/iss/name/sub
  and a "nats" object (type, version 2, and for an account its limits: a
  non-zero mem_storage/disk_storage enables JetStream), signed by the
  issuer's key (the operator's is self-signed).
"""
import base64
import hashlib
import json
import os
import sys
import time

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

PREFIX = {"seed": 18 << 3, "operator": 14 << 3, "account": 0, "user": 20 << 3}


def crc16(data):
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def b32(raw):
    raw += crc16(raw).to_bytes(2, "little")
    return base64.b32encode(raw).decode().rstrip("=")


class Key:
    def __init__(self, kind):
        self.kind = kind
        self.sk = Ed25519PrivateKey.generate()
        raw_pub = self.sk.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        raw_seed = self.sk.private_bytes(
            serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
            serialization.NoEncryption())
        self.public = b32(bytes([PREFIX[kind]]) + raw_pub)
        t = PREFIX[kind]
        self.seed = b32(bytes([PREFIX["seed"] | (t >> 5), (t & 31) << 3]) + raw_seed)


def b64(data):
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def jwt(issuer, subject, name, nats):
    claims = {"iat": int(time.time()), "iss": issuer.public, "name": name,
              "sub": subject.public, "nats": nats}
    body = json.dumps(claims, sort_keys=True, separators=(",", ":")).encode()
    claims["jti"] = base64.b32encode(hashlib.sha256(body).digest()).decode().rstrip("=")
    head = b64(json.dumps({"typ": "JWT", "alg": "ed25519-nkey"}).encode())
    payload = b64(json.dumps(claims, separators=(",", ":")).encode())
    sig = issuer.sk.sign((head + "." + payload).encode())
    return head + "." + payload + "." + b64(sig)


UNLIMITED = {"subs": -1, "data": -1, "payload": -1, "imports": -1,
             "exports": -1, "wildcards": True, "conn": -1, "leaf": -1}


def account(operator, key, name, jetstream):
    limits = dict(UNLIMITED)
    if jetstream:
        limits.update({"mem_storage": -1, "disk_storage": -1, "streams": -1,
                       "consumer": -1})
    return jwt(operator, key, name, {"limits": limits, "type": "account",
                                     "version": 2})


def user(account_key, key, name):
    return jwt(account_key, key, name, {"pub": {}, "sub": {}, "subs": -1,
                                        "data": -1, "payload": -1,
                                        "type": "user", "version": 2})


def creds(user_jwt, user_key):
    return ("-----BEGIN NATS USER JWT-----\n%s\n------END NATS USER JWT------\n\n"
            "************************* IMPORTANT *************************\n"
            "NKEY Seed printed below can be used to sign and prove identity.\n\n"
            "-----BEGIN USER NKEY SEED-----\n%s\n------END USER NKEY SEED------\n"
            % (user_jwt, user_key.seed))


def write(path, text):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def main():
    out = sys.argv[1]
    op, sys_acc, px_acc, stray_acc = (Key("operator"), Key("account"),
                                      Key("account"), Key("account"))
    worker, stranger = Key("user"), Key("user")
    op_jwt = jwt(op, op, "px-test-operator",
                 {"type": "operator", "version": 2,
                  "system_account": sys_acc.public})
    head = "operator: %s\nsystem_account: %s\nresolver: MEMORY\n" % (op_jwt, sys_acc.public)
    sys_line = "  %s: %s\n" % (sys_acc.public, account(op, sys_acc, "SYS", False))
    write(os.path.join(out, "server.conf"),
          head + "resolver_preload: {\n" + sys_line + "  %s: %s\n}\n"
          % (px_acc.public, account(op, px_acc, "PX", True)))
    write(os.path.join(out, "server-nopx.conf"),
          head + "resolver_preload: {\n" + sys_line + "}\n")
    write(os.path.join(out, "worker.creds"),
          creds(user(px_acc, worker, "px-worker"), worker))
    write(os.path.join(out, "stranger.creds"),
          creds(user(stray_acc, stranger, "stranger"), stranger))


if __name__ == "__main__":
    main()
