"""A secured embedded cluster's throwaway certificates: one CA, a certificate per broker and one for the harness.

Everything is PEM, which Kafka (ssl.keystore.type=PEM), the Java clients, librdkafka and kafka-python all read,
so no keystore password exists. The CA's private key lives only in memory while the certificates are issued;
the brokers' and the harness's keys are removed when the cluster is (remove_keys), leaving the public
certificates with the evidence.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID_FOR = datetime.timedelta(days=7)
CA_FILE = "ca.pem"


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "spark-kafka-harness"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _pem_key(key) -> bytes:
    """PKCS#8 without encryption: what Kafka's PEM keystore reads when no ssl.key.password is set."""
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def issue_certificates(
    folder: Path, names: list[str], host: str = "127.0.0.1", host_names: tuple[str, ...] = ()
) -> dict[str, Path]:
    """A new CA in `folder`/ca.pem, and for each of `names` a keystore `folder`/NAME.pem (its key, then its
    certificate and the CA's), valid for `host`, localhost and `host_names`, as a server and as a client. Returns
    name -> file."""
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    start, end = now - datetime.timedelta(minutes=5), now + VALID_FOR
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("harness throwaway CA")
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    ca_pem = ca_cert.public_bytes(serialization.Encoding.PEM)
    (folder / CA_FILE).write_bytes(ca_pem)
    dns = [x509.DNSName(name) for name in dict.fromkeys(("localhost", *host_names))]
    alt_names = x509.SubjectAlternativeName([*dns, x509.IPAddress(ipaddress.ip_address(host))])
    issued = {}
    for name in names:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(name))
            .issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(end)
            .add_extension(alt_names, critical=False)
            .add_extension(
                x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                critical=False,
            )
            .sign(ca_key, hashes.SHA256())
        )
        path = folder / f"{name}.pem"
        path.touch(mode=0o600)
        path.write_bytes(_pem_key(key) + cert.public_bytes(serialization.Encoding.PEM) + ca_pem)
        issued[name] = path
    return issued


def remove_keys(folder: Path) -> None:
    """Keep only the certificates: each keystore is rewritten without its private key."""
    for path in Path(folder).glob("*.pem"):
        if path.name == CA_FILE:
            continue
        text = path.read_text()
        if "PRIVATE KEY" in text:
            kept = text[text.index("-----END PRIVATE KEY-----") + len("-----END PRIVATE KEY-----") :].lstrip()
            tmp = path.with_suffix(".tmp")
            tmp.write_text(kept)
            os.replace(tmp, path)
