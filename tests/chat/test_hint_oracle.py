"""The hidden-record hint says that something relevant exists; it never confirms a guessed word or figure."""

import random

import pytest

from benchmarks.chat.security.hint_oracle import guess_questions, guesses
from knowledge.embedding import chunks_embed
from knowledge.retrieval.hints import hidden_relevant, probe_query, shared_words
from tests.chat.conftest import ask_json, ingest

pytestmark = pytest.mark.django_db


@pytest.fixture
def secrets(world, corpus, shared_topics):
    """Restricted (HR-only) records full of rare words and figures; as many more of each that exist nowhere. The
    topic (a team's budget for a project) is one the tenant writes about openly too."""
    ingest(world, corpus.acme_wiki, external_id="budgets", title="Budget cycle",
           body="Every project gets its budget in the planning cycle.")
    rng = random.Random(11)
    names, figures = guesses(rng, 40)
    inside, outside = (names[:20], figures[:20]), (names[20:], figures[20:])
    for i, (name, figure) in enumerate(zip(*inside, strict=True)):
        ingest(world, corpus.acme_wiki, external_id=f"secret-{i}", title=f"Project {name.upper()}",
               body=f"Project {name.upper()} ({name}) has a budget of {figure} for the robotics team.",
               visibility="restricted", acl=("group:hr",), author="email:admin@example.test")
    chunks_embed()
    return inside, outside


def test_guessed_words_and_figures_get_the_same_hint_rate(world, secrets):
    member = world.authority(world.member)
    (in_names, in_figures), (out_names, out_figures) = secrets
    present, absent = guess_questions(in_names, in_figures), guess_questions(out_names, out_figures)
    assert len(present) == len(absent) == 240
    rate_present = sum(bool(hidden_relevant(member, q, k=8)) for q in present) / len(present)
    rate_absent = sum(bool(hidden_relevant(member, q, k=8)) for q in absent) / len(absent)
    assert abs(rate_present - rate_absent) < 0.05
    assert (rate_present, rate_absent) == (0.0, 0.0)


def test_a_guess_inside_a_real_question_does_not_change_the_hint(world, secrets):
    member = world.authority(world.member)
    (in_names, in_figures), (out_names, out_figures) = secrets
    questions = [f"What is the budget of project {n.upper()} for the robotics team?" for n in in_names + out_names]
    questions += [f"Which project has a budget of {f} for the robotics team?" for f in in_figures + out_figures]
    results = {q: hidden_relevant(member, q, k=8) for q in questions}
    # the topic (a robotics team budget) is in a hidden record: every form hints, the guess changes nothing
    assert all(results.values())
    assert len({tuple(r) for r in results.values()}) == 1


def test_a_topical_question_still_gets_the_hint(world, corpus, shared_topics):
    chunks_embed()
    member = world.authority(world.member)
    [record] = hidden_relevant(member, "How many people does the workforce plan cut from the robotics team?", k=8)
    assert (record.source_name, record.author_email) == ("Acme wiki", "admin@example.test")
    # one or two words are a guess, not a question
    assert hidden_relevant(member, "workforce plan", k=8) == []
    assert hidden_relevant(member, "What about CANARY-HR-7731?", k=8) == []


def test_the_chat_gives_no_hint_for_a_guess(world, secrets, settings):
    settings.ANSWER_CACHE_ENABLED = False
    (in_names, in_figures), (out_names, out_figures) = secrets
    client = world.client(world.member)
    for guess in (in_names[0].upper(), in_figures[0], out_names[0].upper(), out_figures[0]):
        final = ask_json(client, f"What about {guess}?").json()
        assert final["hint"] is None, guess
        assert final["outcome"] == "not_found"


def test_topic_words_are_common_words_only():
    from knowledge.retrieval.hints import topic_words

    assert topic_words("What about HEATHERLIGHT and $742,000 in KR-1042 for McKinsey's robotics team?") == [
        "what", "about", "and", "for", "robotics", "team"]


def test_hints_per_caller_are_rate_limited(world, corpus, shared_topics, settings):
    settings.ANSWER_HINTS_PER_HOUR = 2
    question = "How many people does the workforce plan cut from the robotics team?"
    member = world.client(world.member)
    hints = [ask_json(member, question).json()["hint"] for _ in range(3)]
    assert [bool(h) for h in hints] == [True, True, False]
    # another caller has their own allowance
    assert ask_json(world.client(world.analyst), question).json()["hint"] is not None


@pytest.fixture
def deal(world, corpus):
    """A hidden deal named with ordinary English words, and the company's open notes on acquisitions."""
    ingest(world, corpus.acme_wiki, external_id="corpdev", title="Corporate development",
           body="The company reviews acquisition targets every quarter; each deal for acquiring a company has a "
                "status and an owner.")
    ingest(world, corpus.acme_wiki, external_id="kestrel", title="Project Kestrel",
           body="Kestrel: the company is acquiring Falcon Dynamics; the deal is owned by corporate development.",
           visibility="restricted", acl=("group:hr",), author="email:admin@example.test")
    chunks_embed()


def test_a_name_made_of_ordinary_words_is_not_confirmed(world, deal):
    """Issue #36: "Is Kestrel acquiring Falcon Dynamics?" got a hint, "Condor Robotics" and "Osprey Labs" none."""
    member = world.authority(world.member)
    names = ("Falcon Dynamics", "Condor Robotics", "Osprey Labs", "falcon dynamics", "condor robotics")
    for form in ("Is Kestrel acquiring {}?", "Is the company acquiring {} in a deal owned by corporate development?"):
        questions = [form.format(name) for name in names]
        # the probe never sees the name: its words are in no record every member reads
        assert len({probe_query(member, q) for q in questions}) == 1
        assert len({tuple(hidden_relevant(member, q, k=8)) for q in questions}) == 1, form
    # the topic still hints, for a name or none
    [record] = hidden_relevant(member, "Is the company acquiring Condor Robotics in a deal owned by corporate "
                                       "development?", k=8)
    assert (record.source_name, record.author_email) == ("Acme wiki", "admin@example.test")
    assert hidden_relevant(member, "Is Kestrel acquiring Falcon Dynamics?", k=8) == []
    # the admin reads the deal: nothing is hidden from them; another tenant's caller never hears of it
    assert hidden_relevant(world.authority(world.admin), "Is the company acquiring Falcon Dynamics in a deal "
                                                         "owned by corporate development?", k=8) == []
    assert hidden_relevant(world.authority(world.outsider, world.globex), "Is the company acquiring Falcon "
                                                                          "Dynamics in a deal owned by corporate "
                                                                          "development?", k=8) == []


def test_topic_words_are_words_every_member_of_the_tenant_reads(world, corpus):
    words = ["laptop", "workforce", "pipeline", "leased", "citation", "the"]
    # acme's workspace record has "laptop"; the hr plan ("workforce") and the engineering review ("pipeline", which
    # the member reads) are restricted; "leased" is globex's, "citation" the platform corpus's. Stop words stay.
    assert shared_words(world.authority(world.member), words) == ["laptop", "the"]
    assert shared_words(world.authority(world.admin), words) == ["laptop", "the"]
    assert shared_words(world.authority(world.outsider, world.globex), words) == ["laptop", "leased", "the"]
