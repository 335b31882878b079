from __future__ import annotations

from chat.groundedness import check_claims, names_in, split_claims
from tests.chat.factories import evidence

BUDGET = evidence(
    "Northwind's FY26 budget freezes headcount in Operations. The warehouse pilot costs 1,200,000 dollars.",
    title="FY26 budget",
)
MARGIN = evidence("The CFO tied the decision to the Q1 margin miss.")
LABELS = {"S1": BUDGET, "S2": MARGIN}


def test_claims_are_sentences_with_their_labels_including_labels_after_the_full_stop():
    text = "Headcount is frozen in Operations [S1]. The CFO tied it to the margin miss. [S2] Thanks!"
    assert split_claims(text) == [
        ("Headcount is frozen in Operations.", ["S1"]),
        ("The CFO tied it to the margin miss.", ["S2"]),
        ("Thanks!", []),
    ]


def test_supported_claims_verify():
    result = check_claims(
        "Northwind freezes headcount in Operations [S1]. The warehouse pilot costs 1,200,000 dollars [S1]. "
        "The CFO tied the freeze to the Q1 margin miss [S2][S1].",
        LABELS,
    )
    assert (result.verified, result.total) == (3, 3)
    assert result.badge == "verified 3/3 claims"


def test_numbers_must_appear_in_the_cited_evidence():
    result = check_claims("The warehouse pilot costs 2,500,000 dollars [S1].", LABELS)
    claim = result.per_claim[0]
    assert not claim.verified and claim.reasons == ["numbers_missing"] and claim.missing_numbers == ["2500000"]


def test_names_must_appear_in_the_cited_evidence():
    result = check_claims("Globex freezes headcount in Operations [S1].", LABELS)
    claim = result.per_claim[0]
    assert not claim.verified and claim.missing_names == ["Globex"]


def test_citing_the_wrong_source_fails_overlap():
    result = check_claims("The warehouse pilot costs 1,200,000 dollars [S2].", LABELS)
    assert result.per_claim[0].reasons == ["numbers_missing", "low_overlap"]


def test_uncited_and_unknown_labels_are_unverified():
    result = check_claims("Headcount is frozen. Budgets were cut [S9].", LABELS)
    assert [(c.verified, c.reasons) for c in result.per_claim] == [
        (False, ["no_citation"]),
        (False, ["unknown_label"]),
    ]
    assert (result.verified, result.total) == (0, 2)


def test_embedding_similarity_replaces_term_overlap_when_given():
    def embed(texts):
        # A stand-in model: claims about pilots are close to the budget chunk, everything else orthogonal.
        return [[1.0, 0.0] if "pilot" in t.lower() else [0.0, 1.0] for t in texts]

    good = check_claims("Pilot spending is fixed [S1].", LABELS, embed=embed)
    assert good.per_claim[0].verified and good.per_claim[0].support == 1.0
    bad = check_claims("The pilot spending is fixed [S2].", LABELS, embed=embed)
    assert bad.per_claim[0].reasons == ["low_similarity"]


def test_names_skip_stopwords_and_sentence_openers():
    assert names_in("However, Northwind and The CFO met Jane O'Neil in Dublin.") == [
        "Northwind",
        "CFO",
        "Jane",
        "O'Neil",
        "Dublin",
    ]


def test_empty_answer_has_no_claims():
    assert check_claims("", LABELS).total == 0
