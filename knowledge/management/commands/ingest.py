"""Ingest files or a folder into a tenant: `manage.py ingest PATH --tenant SLUG [--source NAME]`.

Every file type the upload page reads (knowledge.files: text, Markdown, HTML, CSV, PDF, Office, e-mail) becomes
one document (external id = path relative to PATH), read by the same readers; `.json` files hold
`{"records": [...]}` or a list of records, and `.jsonl` one record a line, each with the document fields of the
API (DocumentInput.from_record: without `visibility` and `acl` a record inherits its source's access;
`--visibility`/`--acl` apply to the other files). A bad file or record is reported on an `error:` line and
skipped; the exit status is non-zero when any failed.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from groundwork.models import Tenant
from groundwork.selectors import authority_for_service

from ...files import FileRefused, file_kind, file_parse_isolated
from ...models import Source
from ...services import DocumentInput, documents_import


def _records(path: Path) -> list[dict]:
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    data = json.loads(path.read_text())
    return data["records"] if isinstance(data, dict) else data


class Command(BaseCommand):
    help = "Ingest a file or folder (text, Markdown, HTML, JSON records) into a tenant's source."

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--tenant", required=True, help="tenant slug (or 'platform' for the platform corpus)")
        parser.add_argument("--source", help="source name (created as kind 'folder' when missing)")
        parser.add_argument("--kind", default="folder")
        parser.add_argument("--visibility", default="workspace", choices=["workspace", "restricted"])
        parser.add_argument("--acl", action="append", default=[], help="ACL principal, repeatable")
        parser.add_argument("--batch-size", type=int, default=200)

    def handle(self, *args, path, tenant, source, kind, visibility, acl, batch_size, **options):
        root = Path(path)
        if not root.exists():
            raise CommandError(f"{root} does not exist")
        target = Tenant.objects.filter(slug=tenant).first()
        if target is None:
            raise CommandError(f"no tenant {tenant!r}")
        authority = authority_for_service(tenant=target, service_name="ingest-command", role="admin")
        name = source or f"folder:{root.resolve().name}"
        src, _ = Source.objects.get_or_create(tenant=target, name=name, defaults={"kind": kind})
        files = sorted(p for p in ([root] if root.is_file() else root.rglob("*")) if p.is_file())
        items, errors = [], 0
        for file in files:
            rel = file.name if root.is_file() else str(file.relative_to(root))
            try:
                if file.suffix in (".json", ".jsonl"):
                    for number, record in enumerate(_records(file), start=1):
                        try:
                            items.append(DocumentInput.from_record(record))
                        except ValidationError as exc:
                            errors += 1
                            self.stderr.write(f"error: {rel} record {number}: {'; '.join(exc.messages)}")
                    continue
                if file_kind(file.name) is None:
                    continue
                items += [document.overridden(external_id=rel, visibility=visibility, acl=tuple(acl))
                          for document in file_parse_isolated(rel, file.read_bytes())]
            except FileRefused as refused:
                errors += 1
                self.stderr.write(f"error: {rel}: {refused.reason}")
            except ValidationError as exc:  # the envelope refused a value (a path over 512 characters)
                errors += 1
                self.stderr.write(f"error: {rel}: {'; '.join(exc.messages)}")
            except (ValueError, KeyError, UnicodeDecodeError) as exc:
                errors += 1
                self.stderr.write(f"error: {rel}: {exc}")
        counts = {"created": 0, "updated": 0, "metadata_updated": 0, "unchanged": 0, "chunks": 0}
        with tqdm(total=len(items), unit="doc", disable=not items) as bar:
            for start in range(0, len(items), batch_size):
                batch = items[start:start + batch_size]
                try:
                    result = documents_import(authority=authority, source=src, items=batch, batch_size=batch_size)
                except ValidationError as exc:
                    errors += 1
                    self.stderr.write(f"error: batch {start // batch_size + 1}: {'; '.join(exc.messages)}")
                    bar.update(len(batch))
                    continue
                for key, value in result.items():
                    counts[key] += value
                bar.update(len(batch))
        self.stdout.write(f"ingested into {target.slug}/{src.name}: {counts}")
        if errors:
            raise CommandError(f"{errors} file(s), record(s) or batch(es) failed; see the error lines above")
