"""The answers API: ask (streamed as Server-Sent Events or as one JSON body), read an answer back with its
verification, list and open one's own conversations, and the tenant's gap events for admins."""

from __future__ import annotations

from collections.abc import Iterator

from django.http import Http404, StreamingHttpResponse
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response

from chat.answering import AnswerEvent, answer_events, answer_html
from chat.selectors import (
    WITHDRAWN_TEXT,
    access_request_payload,
    access_requests_for,
    answers_marked_unhelpful,
    answers_withdrawn,
    citations_present,
    conversation_access,
    conversation_messages,
    conversations_search,
    feedback_of,
    gap_events_by_frequency,
    message_access,
)
from chat.services import (
    FEEDBACK_REASON_MAX,
    TITLE_MAX,
    AccessRequestRefused,
    ConversationGone,
    ConversationInvalid,
    access_request_create,
    answer_feedback_set,
    conversation_delete,
    conversation_rename,
    conversation_start,
    evidence_from_citation,
)
from chat.streaming import sse_comment, sse_event
from groundwork.api import AuthorityAPIView, found
from groundwork.permissions import role_required
from groundwork.schema import component_ref, sse_event_schema


class EventStreamRenderer(BaseRenderer):
    """Lets content negotiation accept `Accept: text/event-stream`; the view streams the body itself."""

    media_type = "text/event-stream"
    format = "sse"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return sse_event("error", data if isinstance(data, dict) else {"detail": str(data)})


class CitationOutput(serializers.Serializer):
    label = serializers.CharField()
    record_url = serializers.CharField()
    title = serializers.CharField()
    document_id = serializers.IntegerField()
    chunk_id = serializers.IntegerField()
    source_kind = serializers.CharField()
    source_name = serializers.CharField()
    fragment = serializers.CharField()
    start = serializers.IntegerField()
    end = serializers.IntegerField()
    cited_start = serializers.IntegerField(required=False, help_text=(
        "where the sentence(s) the answer rests on begin in the record (within start-end); the viewer link "
        "highlights cited_start-cited_end"))
    cited_end = serializers.IntegerField(required=False, help_text="where those sentences end")
    viewer_url = serializers.CharField(help_text="the in-app record viewer at the cited sentence(s) (primary link)")
    location = serializers.CharField(help_text='where the fragment sits, e.g. "page 3"; empty when unknown')
    fragment_html = serializers.CharField(help_text="the fragment as sanitised HTML")


class HintSourceOutput(serializers.Serializer):
    source_kind = serializers.CharField()
    source_name = serializers.CharField()
    contact = serializers.EmailField(required=False)


class HintOutput(serializers.Serializer):
    exists = serializers.BooleanField()
    sources = HintSourceOutput(many=True)


class AnswerOutput(serializers.Serializer):
    message_id = serializers.IntegerField()
    conversation_id = serializers.IntegerField()
    answer = serializers.CharField()
    html = serializers.CharField()
    outcome = serializers.ChoiceField(choices=["answered", "not_found", "partial", "unavailable", "small_talk"])
    mode = serializers.ChoiceField(choices=["grounding", "conversational"])
    corpus = serializers.ChoiceField(choices=["tenant", "empty"])
    citations = CitationOutput(many=True)
    sources = CitationOutput(many=True, required=False,
                             help_text="final event: every source under its final label, cited ones first")
    hint = HintOutput(allow_null=True)
    verification = serializers.DictField()
    lexical_only = serializers.BooleanField(
        help_text="retrieved by full text alone because the embedder failed or timed out: paraphrased evidence "
                  "may have been missed")
    judge = serializers.CharField(
        required=False, allow_blank=True,
        help_text="the version of the answerability judge that decided the answer (e.g. reader:2026-12); empty "
                  "when none did (small talk, a statement the retrieval gate decided)")
    composer = serializers.CharField(
        required=False, allow_blank=True,
        help_text="the version of the rule set that composed the answer from evidence sentences (e.g. "
                  "compose:2026-12-06); empty when a model wrote it, for a fixed reply, or an answer from the cache")
    withdrawn = serializers.BooleanField(
        required=False, help_text="read back: true when a record the answer cited is no longer readable by you; "
                                  "the answer is then the withdrawal notice, without citations")
    removed_labels = serializers.ListField(child=serializers.CharField(), required=False,
                                           help_text="labels the model wrote that cite nothing retrieved (dropped)")
    cached = serializers.BooleanField(required=False, help_text="served from the answer cache")
    read_as = serializers.CharField(
        required=False, allow_null=True,
        help_text="the question searched when yours referred back to an earlier one in the conversation (\"who "
                  "owns it?\" -> \"who owns the battery safety programme?\"); null otherwise")
    error = serializers.CharField(required=False, help_text="why the model could not answer, when it could not")
    feedback = serializers.ChoiceField(choices=["up", "down"], allow_null=True, required=False,
                                       help_text="the caller's own thumbs up or down on this answer, if any")


# The stream, event by event (the OpenAPI 3.2 / schemathesis reading of a text/event-stream schema): `sources`
# before any `token`, then one `final` with the JSON response's body; `error` when the request is refused. One
# event schema whose data is any of the payloads: a custom keyword's failure inside a `oneOf` branch would not
# just fail the branch.
ANSWER_STREAM_EVENT = sse_event_schema(("sources", "token", "final", "error"), {"anyOf": [
    {"type": "object", "required": ["sources"],
     "properties": {"sources": {"type": "array", "items": component_ref("CitationOutput")}}},
    {"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}},
    component_ref("AnswerOutput"),
    component_ref("ErrorOutput"),
]})


def message_payload(authority, message, *, withdrawn: bool, feedback: str | None = None) -> dict:
    """A stored answer as the caller may see it now. `withdrawn` comes from `answers_withdrawn` (computed once
    for every message shown): a withdrawn answer keeps nothing of what it said or quoted — not the text, the
    fragments, nor the verification's claims — only the notice, its outcome and its content-free hint."""
    base = {"message_id": message.pk, "conversation_id": message.conversation_id, "outcome": message.outcome,
            "mode": message.mode, "corpus": message.corpus, "hint": message.hint, "withdrawn": withdrawn,
            "lexical_only": message.lexical_only, "judge": message.judge, "feedback": feedback,
            "composer": message.composer}
    if withdrawn:
        return {**base, "answer": WITHDRAWN_TEXT, "html": answer_html(WITHDRAWN_TEXT, {}), "citations": [],
                "verification": {"status": "not_applicable"}}
    label_map = {c["label"]: evidence_from_citation(c) for c in message.citations}
    return {**base, "answer": message.content, "html": answer_html(message.content, label_map),
            "citations": citations_present(authority, message.citations), "verification": message.verification}


def _sse(events: Iterator[AnswerEvent]) -> Iterator[bytes]:
    yield sse_comment("answer stream")  # headers and a first byte out at once, before retrieval runs
    try:
        for event in events:
            yield sse_event(event.name, event.data)
    except ConversationGone as gone:  # the status line is long gone: the stream ends with the refusal instead
        yield sse_event("error", {"detail": str(gone)})


class AnswerCreateApi(AuthorityAPIView):
    renderer_classes = [JSONRenderer, EventStreamRenderer]

    class InputSerializer(serializers.Serializer):
        question = serializers.CharField(max_length=4000)
        conversation_id = serializers.IntegerField(required=False, allow_null=True, default=None)

    @extend_schema(
        summary="Ask a question",
        description=(
            "Answers from the caller's readable records with [Sn] citations, or conversationally when a model "
            "is configured and decides not to search. With `Accept: text/event-stream` or `?stream=1` the answer "
            "streams as Server-Sent Events: one `sources` event (labels, titles, record URLs) before any "
            "`token` event, then one `final` event with the same body as the JSON response. Verification "
            "starts `pending`; read it back from GET /answers/{id}."
        ),
        request=InputSerializer,
        parameters=[OpenApiParameter("stream", bool, description="Stream as Server-Sent Events")],
        responses={(200, "application/json"): AnswerOutput,
                   (200, "text/event-stream"): OpenApiResponse(ANSWER_STREAM_EVENT, description=(
                       "Server-Sent Events: `sources`, `token`…, `final` (data: JSON); `error` instead of `final` "
                       "when the conversation was deleted meanwhile")),
                   404: OpenApiResponse(description="No such conversation, or one that is not the caller's, or "
                                                    "one deleted while the answer was written")},
    )
    def post(self, request, **kwargs):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        authority = self.authority
        question = data.validated_data["question"].strip()
        conversation_id = data.validated_data["conversation_id"]
        if conversation_id is not None:
            conversation = found(conversation_access(authority, conversation_id))
        else:
            conversation = conversation_start(authority, title=question)
        events = answer_events(authority, question=question, conversation=conversation)
        wants_stream = request.query_params.get("stream") in ("1", "true") or (
            "text/event-stream" in request.headers.get("Accept", ""))
        if wants_stream:
            response = StreamingHttpResponse(_sse(events), content_type="text/event-stream; charset=utf-8")
            response["Cache-Control"] = "no-cache"
            response["X-Accel-Buffering"] = "no"  # nginx: do not buffer the stream
            return response
        final: dict = {}
        try:
            for event in events:
                if event.name == "final":
                    final = event.data
        except ConversationGone as gone:
            raise NotFound(str(gone)) from gone
        return Response(final)


class AnswerDetailApi(AuthorityAPIView):
    @extend_schema(summary="An answer with its verification",
                   description=("Reads back one of the caller's own answers, with the groundedness check "
                                "(\"verified n/m claims\") once the background task has run; `pending` before. Only "
                                "answers in the caller's own conversations; anyone else's answers 404. Every "
                                "citation is re-checked against the caller's current access: an answer citing a "
                                "record they can no longer read comes back `withdrawn`, with the notice instead "
                                "of its text and no citations."),
                   responses={200: AnswerOutput})
    def get(self, request, message_id: int, **kwargs):
        message = found(message_access(self.authority, message_id))
        withdrawn = message.pk in answers_withdrawn(self.authority, [message])
        return Response(message_payload(self.authority, message, withdrawn=withdrawn,
                                        feedback=feedback_of([message]).get(message.pk)))


class AnswerFeedbackInput(serializers.Serializer):
    rating = serializers.ChoiceField(choices=["up", "down"], help_text="thumbs up or down")
    reason = serializers.CharField(required=False, allow_blank=True, default="", max_length=FEEDBACK_REASON_MAX,
                                   help_text="optional: what was wrong (or right) with the answer")


class AnswerFeedbackOutput(serializers.Serializer):
    message_id = serializers.IntegerField()
    rating = serializers.ChoiceField(choices=["up", "down"])
    reason = serializers.CharField(allow_blank=True)


class AnswerFeedbackApi(AuthorityAPIView):
    @extend_schema(summary="Rate an answer",
                   description=("Thumbs up or down on one of the caller's own answers, with an optional reason; a "
                                "second rating replaces the first. Downs appear on the tenant admins' gaps page "
                                "(and GET /gaps/unhelpful-answers) beside the refused questions. Anyone else's "
                                "answer answers 404."),
                   request=AnswerFeedbackInput, responses={200: AnswerFeedbackOutput})
    def post(self, request, message_id: int, **kwargs):
        message = found(message_access(self.authority, message_id))  # the id first, as everywhere
        data = AnswerFeedbackInput(data=request.data)
        data.is_valid(raise_exception=True)
        feedback = answer_feedback_set(self.authority, message=message, rating=data.validated_data["rating"],
                                       reason=data.validated_data["reason"])
        return Response({"message_id": message.pk, "rating": feedback.rating, "reason": feedback.reason})


class ConversationOutput(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField()
    created_at = serializers.DateTimeField()


class ConversationListApi(AuthorityAPIView):
    @extend_schema(summary="My conversations",
                   description=("The caller's own conversations in this tenant, newest first (at most 100): id, "
                                "title and start time. Nobody sees another person's conversations. `q` keeps those "
                                "whose title or one of whose questions contains it (case-insensitive)."),
                   parameters=[OpenApiParameter("q", str, description="words in the title or a question")],
                   responses={200: ConversationOutput(many=True)})
    def get(self, request, **kwargs):
        rows = conversations_search(self.authority, request.query_params.get("q", "")[:200])[:100]
        return Response(ConversationOutput(rows, many=True).data)


class ConversationMessageOutput(serializers.Serializer):
    role = serializers.ChoiceField(choices=["user", "assistant"])
    content = serializers.CharField(required=False, help_text="user messages")
    message_id = serializers.IntegerField(required=False)
    answer = serializers.CharField(required=False)
    html = serializers.CharField(required=False)
    outcome = serializers.CharField(required=False)
    mode = serializers.CharField(required=False)
    corpus = serializers.CharField(required=False)
    citations = CitationOutput(many=True, required=False)
    hint = HintOutput(allow_null=True, required=False)
    verification = serializers.DictField(required=False)
    lexical_only = serializers.BooleanField(required=False)
    judge = serializers.CharField(required=False, allow_blank=True)
    withdrawn = serializers.BooleanField(required=False, help_text="see the answer's `withdrawn`")


class ConversationRenameInput(serializers.Serializer):
    # Length and blankness are the service's to judge (conversation_rename), after whitespace is folded.
    title = serializers.CharField(allow_blank=True, trim_whitespace=False,
                                  help_text=f"the new title (1 to {TITLE_MAX} characters once whitespace is folded)")


class ConversationDetailOutput(ConversationOutput):
    messages = ConversationMessageOutput(many=True)


class ConversationDetailApi(AuthorityAPIView):
    @extend_schema(summary="One of my conversations with its messages",
                   description=("A conversation of the caller with every question and answer in order, answers "
                                "with their sanitised HTML, citations and verification; answers citing a record "
                                "the caller can no longer read are `withdrawn` (see GET /answers/{id}). Someone "
                                "else's conversation answers 404."),
                   responses={200: ConversationDetailOutput})
    def get(self, request, conversation_id: int, **kwargs):
        conversation = found(conversation_access(self.authority, conversation_id))
        rows = list(conversation_messages(conversation))
        withdrawn = answers_withdrawn(self.authority, rows)
        feedback = feedback_of(rows)
        messages = []
        for message in rows:
            if message.role == "user":
                messages.append({"role": "user", "content": message.content})
            else:
                messages.append({"role": "assistant",
                                 **message_payload(self.authority, message, withdrawn=message.pk in withdrawn,
                                                   feedback=feedback.get(message.pk))})
        return Response({**ConversationOutput(conversation).data, "messages": messages})

    @extend_schema(summary="Rename one of my conversations", request=ConversationRenameInput,
                   description="A new title (1 to 200 characters, whitespace folded). Someone else's: 404.",
                   responses={200: ConversationOutput})
    def patch(self, request, conversation_id: int, **kwargs):
        # The id first: a missing or someone else's conversation is 404 whatever the body says (refusal rule).
        conversation = found(conversation_access(self.authority, conversation_id))
        data = ConversationRenameInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            conversation_rename(self.authority, conversation=conversation, title=data.validated_data["title"])
        except ConversationInvalid as invalid:
            raise ValidationError({"title": [str(invalid)]}) from invalid
        return Response(ConversationOutput(conversation).data)

    @extend_schema(summary="Delete one of my conversations",
                   description="Deletes it with its questions, answers and their ratings. Someone else's: 404.",
                   responses={204: None})
    def delete(self, request, conversation_id: int, **kwargs):
        conversation = found(conversation_access(self.authority, conversation_id))
        conversation_delete(self.authority, conversation=conversation)
        return Response(status=204)


class GapEventOutput(serializers.Serializer):
    kind = serializers.CharField()
    canonical = serializers.CharField()
    example = serializers.CharField()
    cause = serializers.CharField()
    count = serializers.IntegerField()
    first_seen = serializers.DateTimeField()
    last_seen = serializers.DateTimeField()


class GapEventListApi(AuthorityAPIView):
    @role_required("admin")
    @extend_schema(summary="Interview next: unanswered questions by frequency",
                   description=("Questions the tenant's records could not answer (refused or not found), grouped "
                                "and counted, most frequent first: what to write down or import next."),
                   responses={200: GapEventOutput(many=True)})
    def get(self, request, **kwargs):
        return Response(GapEventOutput(gap_events_by_frequency(self.authority)[:200], many=True).data)


class UnhelpfulAnswerOutput(serializers.Serializer):
    canonical = serializers.CharField(allow_blank=True)
    example = serializers.CharField(allow_blank=True, help_text="one wording of the question")
    count = serializers.IntegerField(help_text="thumbs down on answers to it")
    last_seen = serializers.DateTimeField()
    reasons = serializers.ListField(child=serializers.CharField(), help_text="the reasons given (distinct)")


class UnhelpfulAnswerListApi(AuthorityAPIView):
    @role_required("admin")
    @extend_schema(summary="Answers marked unhelpful, by frequency",
                   description=("Questions whose answers readers marked thumbs down, grouped like the refused "
                                "questions, most frequent first, with the reasons given."),
                   responses={200: UnhelpfulAnswerOutput(many=True)})
    def get(self, request, **kwargs):
        return Response(UnhelpfulAnswerOutput(answers_marked_unhelpful(self.authority)[:200], many=True).data)


class AccessRequestOutput(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=["open", "granted", "declined"])
    created_at = serializers.DateTimeField()


class AccessRequestRecordOutput(serializers.Serializer):
    readable = serializers.BooleanField(help_text="false: a record you cannot read (nothing else is said)")
    document_id = serializers.IntegerField(required=False)
    title = serializers.CharField(required=False)
    viewer_url = serializers.CharField(required=False)


class AccessRequestDetailOutput(AccessRequestOutput):
    question = serializers.CharField()
    resolved_at = serializers.DateTimeField(allow_null=True)
    requester = serializers.CharField(required=False, help_text="tenant admins only")
    records = AccessRequestRecordOutput(many=True, required=False, help_text="tenant admins only")


class AccessRequestInput(serializers.Serializer):
    answer_id = serializers.IntegerField(help_text="the answer (message_id) whose hint names hidden records")


class AccessRequestApi(AuthorityAPIView):

    @extend_schema(
        summary="Request access to the records behind a hint",
        description=(
            "For an answer of yours that carries a hidden-record hint: asks the tenant's admins for access. "
            "201 with the new request, 200 with the open one on a repeat, 404 for an answer that is not yours "
            "or has no hint. The records themselves are never named in the response."
        ),
        request=AccessRequestInput,
        responses={201: AccessRequestOutput, 200: AccessRequestOutput,
                   404: OpenApiResponse(description="No such answer")},
    )
    def post(self, request, **kwargs):
        data = AccessRequestInput(data=request.data)
        data.is_valid(raise_exception=True)
        message = found(message_access(self.authority, data.validated_data["answer_id"]))
        manage_url = request.build_absolute_uri(
            reverse("pages:access-requests", kwargs={"tenant_slug": self.authority.tenant_slug}))
        try:
            access_request, created = access_request_create(self.authority, message=message, manage_url=manage_url)
        except AccessRequestRefused as refused:
            if refused.status == 404:
                raise Http404 from refused
            return Response({"detail": refused.message}, status=refused.status)
        return Response(AccessRequestOutput(access_request).data, status=201 if created else 200)

    @extend_schema(
        summary="Access requests",
        description="Tenant admins: every request of the tenant, with who asked, the question and the records "
                    "(title and viewer link, or a record you cannot read). Others: their own requests.",
        responses={200: AccessRequestDetailOutput(many=True)},
    )
    def get(self, request, **kwargs):
        rows = access_requests_for(self.authority)[:200]
        return Response([access_request_payload(self.authority, r) for r in rows])
