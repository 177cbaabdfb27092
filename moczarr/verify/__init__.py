"""Verification: whole-store checks that an open does not make, as findings a caller can act on."""

from ._findings import Finding, VerifyReport
from ._store import combined_digest, content_digest, verify_store

__all__ = ["Finding", "VerifyReport", "combined_digest", "content_digest", "verify_store"]
