"""`existence_oracles`: answers that tell an existing thing the caller may not see from one that does not exist
(goal 0). Each check asks the same question about a hidden target and about a missing one, and compares what
comes back (statuses, outcomes, messages, pages with CSRF tokens and the asked-for ids normalised away):

- upload names: tenant A's member uploads files named like A's restricted documents (readable only by group
  vault) and files of free names; the outcome and the stored name's shape must be the same;
- usernames: A's tenant admin adds a user whose address's local part is B's user's username, the platform
  operator's, or nobody's, and renames one of A's members to those names;
- admin redirects: `/admin/r/<content type>/<id>/` for the operator, B's user, tenant B and B's document against
  ids that do not exist, with DEBUG off and on;
- review pairs: A's admin (not in vault) reads the review queue where a readable claim resembles a hidden one
  (against the same item with no similar claim), and the page of an item whose claim is hidden (against a missing
  item's).

`existence_oracle_checks` counts the comparisons; `existence_oracle_examples` names those that differed.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test.utils import override_settings

from findings.models import ReviewItem
from findings.writer import FactInput, claims_write
from groundwork.models import Tenant
from knowledge.models import Document, Source
from knowledge.services import DocumentInput, documents_ingest

from ._world import ProbeWorld, probe_world

HIDDEN_NAMES = ["layoffs-2026-plan.txt", "board-minutes.md", "salary-bands.csv", "merger-term-sheet.txt",
                "incident-4711.txt"]
_CSRF = re.compile(r'(?:name="csrfmiddlewaretoken" value="|csrftoken=)[^"; ]*')


def _page(response, *replacements: tuple[str, str]) -> tuple[int, str]:
    text = _CSRF.sub("", response.content.decode(errors="replace"))
    for old, new in replacements:
        text = text.replace(old, new)
    return response.status_code, text


def _messages(response, *replacements: tuple[str, str]) -> tuple:
    said = []
    for message in response.context["messages"] if response.context else ():
        text = str(message)
        for old, new in replacements:
            text = text.replace(old, new)
        said.append(text)
    return [code for _, code in response.redirect_chain], said


class Checks:
    def __init__(self) -> None:
        self.count = 0
        self.differed: list[str] = []

    def same(self, label: str, hidden, missing) -> None:
        self.count += 1
        if hidden != missing:
            self.differed.append(label)


def _uploads(world: ProbeWorld, checks: Checks, names: list[str]) -> None:
    source = Source.objects.create(tenant=world.a, kind="upload", name=f"Probe {world.tag} drive",
                                   members_may_upload=True)
    documents_ingest(authority=world.service(world.a), source=source, items=[
        DocumentInput(external_id=name, title="Restricted", body=f"Hidden record {name}", visibility="restricted",
                      acl=("group:vault",)) for name in names])
    member = world.client("member")

    def upload(name: str) -> tuple:
        response = member.post(f"/api/v1/sources/{source.pk}/uploads",
                               {"files": [SimpleUploadedFile(name, b"Notes\n\nA member's file.")]})
        if response.status_code != 202:
            return response.status_code, response.content.decode()
        item = member.get(f"/api/v1/uploads/{response.json()['id']}").json()["items"][0]
        stored = Document.objects.filter(pk=item["document_id"]).values_list("external_id", flat=True).first()
        return item["status"], item["reason"], (stored or "").replace(name, "NAME")

    for name in names:
        fresh = f"free-{uuid.uuid4().hex[:6]}-{name}"
        hidden_answer, missing_answer = upload(name), upload(fresh)
        checks.same(f"upload {name}", hidden_answer, tuple(
            part.replace(fresh, name) if isinstance(part, str) else part for part in missing_answer))


def _usernames(world: ProbeWorld, checks: Checks, operator) -> None:
    admin = world.client("admin")
    b_user = world.users["b_member"]
    nobody = f"probe-{world.tag}-nobody"

    def add(local: str) -> tuple:
        response = admin.post("/admin/auth/user/add/", {"email": f"{local}@probe.invalid", "tenant": world.a.pk,
                                                        "role": "member"}, follow=True)
        added = get_user_model().objects.filter(email=f"{local}@probe.invalid").order_by("-pk").first()
        replacements = [(added.username, "NAME"), (f"/{added.pk}/", "/ID/")] if added else []
        return response.status_code, _messages(response, *replacements, (local, "LOCAL"))

    missing = add(nobody)
    for label, taken in (("B's user", b_user.get_username()), ("the operator", operator.get_username())):
        checks.same(f"add user named like {label}", add(taken), missing)

    member = world.users["member"]

    def rename(to: str) -> tuple:
        response = admin.post(f"/admin/auth/user/{member.pk}/change/", {
            "username": to, "email": member.email, "is_active": "on", "date_joined_0": "2025-01-01",
            "date_joined_1": "00:00:00"}, follow=True)
        member.refresh_from_db()
        return response.status_code, _messages(response, (to, "NAME")), member.get_username()

    missing = rename(nobody)
    for label, taken in (("B's user", b_user.get_username()), ("the operator", operator.get_username())):
        checks.same(f"rename to {label}'s username", rename(taken), missing)


def _admin_redirects(world: ProbeWorld, checks: Checks, operator) -> None:
    admin = world.client("admin")
    user_ct, tenant_ct, document_ct = (ContentType.objects.get_for_model(model).pk
                                       for model in (get_user_model(), Tenant, Document))
    b_document = world.ingest(world.b, [DocumentInput(external_id=f"b-{world.tag}", title="B", body="B's record")])[0]
    missing_id = 2**31 - 7
    for debug in (False, True):
        with override_settings(DEBUG=debug):
            for label, ct, object_id in (("the operator", user_ct, operator.pk), ("B's user", user_ct,
                                                                                  world.users["b_member"].pk),
                                         ("tenant B", tenant_ct, world.b.pk), ("B's document", document_ct,
                                                                               b_document.pk)):
                hidden = _page(admin.get(f"/admin/r/{ct}/{object_id}/"), (f"r/{ct}/{object_id}/", "PATH"))
                missing = _page(admin.get(f"/admin/r/{ct}/{missing_id}/"), (f"r/{ct}/{missing_id}/", "PATH"))
                checks.same(f"/admin/r/ for {label} (DEBUG {debug})", hidden, missing)


def _review_pairs(world: ProbeWorld, checks: Checks) -> None:
    # Letters only: two object keys that both carry a number are different identifiers, never paired for review
    # (findings.consolidation), and the world's tag is hex.
    letters = world.tag.translate(str.maketrans("0123456789", "ghijklmnop"))
    tool_hidden, tool_open = f"Zephyr{letters}", f"Quartz{letters}"

    def claim(external_id: str, tool: str, acl) -> None:
        sentence = f"The Payments Team uses {tool}."
        document = world.ingest(world.a, [DocumentInput(external_id=external_id, title=external_id, body=sentence,
                                                        visibility="restricted" if acl else None, acl=acl)])[0]
        chunk = document.chunks.order_by("ordinal").first()
        start = chunk.text.index(sentence)
        claims_write(tenant_id=world.a.pk, label=external_id, facts=[FactInput(
            subject=f"Payments Team {world.tag}", subject_kind="team", predicate="uses", object=tool,
            object_kind="vendor", statement=sentence, quote=sentence, quote_start=start,
            quote_end=start + len(sentence), valid_from=datetime(2025, 1, 1, tzinfo=UTC), valid_to=None,
            chunk_id=chunk.pk, document_id=document.pk)])

    with override_settings(CONSOLIDATION_BORDERLINE_FLOOR=0.0, CONSOLIDATION_AUTO_MERGE_THRESHOLD=1.0):
        claim("pair-hidden", tool_hidden, ("group:vault",))  # first: the readable one is written beside it
        claim("pair-open", tool_open, None)
        claim("pair-hidden-2", f"{tool_hidden}x", ("group:vault",))  # an item whose own claim is hidden
    admin = world.client("admin")
    items = ReviewItem.objects.filter(tenant=world.a).select_related("claim")
    paired = items.filter(claim__object_value=tool_open, similar_claim__isnull=False).first()
    hidden_item = items.filter(claim__object_value=f"{tool_hidden}x").first()
    if paired is None or hidden_item is None:
        raise RuntimeError("the probe's claims made no review items to compare")
    queue = _page(admin.get("/admin/findings/reviewitem/"))
    page = _page(admin.get(f"/admin/findings/reviewitem/{paired.pk}/change/"))
    similar = paired.similar_claim_id
    ReviewItem.objects.filter(pk=paired.pk).update(similar_claim=None)
    try:
        checks.same("review queue: a readable claim paired with a hidden one", queue,
                    _page(admin.get("/admin/findings/reviewitem/")))
        checks.same("review item page: a readable claim paired with a hidden one", page,
                    _page(admin.get(f"/admin/findings/reviewitem/{paired.pk}/change/")))
    finally:
        ReviewItem.objects.filter(pk=paired.pk).update(similar_claim=similar)
    missing_id = 2**31 - 7
    checks.same("review item page of a hidden claim",
                _messages(admin.get(f"/admin/findings/reviewitem/{hidden_item.pk}/change/", follow=True),
                          (str(hidden_item.pk), "ID")),
                _messages(admin.get(f"/admin/findings/reviewitem/{missing_id}/change/", follow=True),
                          (str(missing_id), "ID")))


def measure(out_dir: Path, quick: bool) -> dict:
    checks = Checks()
    with probe_world() as world, override_settings(ALLOWED_HOSTS=["testserver"], ANSWER_CACHE_ENABLED=False,
                                                   EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend"):
        operator = get_user_model().objects.create_superuser(f"probe-{world.tag}-operator",
                                                             f"probe-{world.tag}-operator@probe.invalid", None)
        _uploads(world, checks, HIDDEN_NAMES[:2] if quick else HIDDEN_NAMES)
        _usernames(world, checks, operator)
        _admin_redirects(world, checks, operator)
        _review_pairs(world, checks)
    return {"existence_oracles": len(checks.differed), "existence_oracle_checks": checks.count,
            "existence_oracle_examples": checks.differed[:10]}
