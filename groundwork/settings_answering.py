"""Settings of how records become answers: chunking, embeddings, retrieval, findings extraction and
consolidation, the model endpoint, chat answers, the refusal gate and hidden-record hints. Part of
groundwork/settings.py (which star-imports it), kept apart by concern; declared here once, through the env
helpers, like the rest (tests/groundwork/test_settings_sources.py)."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from .env import env_bool, env_float, env_int, env_str

# --- Knowledge: chunking -------------------------------------------------------------------------------
CHUNK_TOKEN_BUDGET = env_int("CHUNK_TOKEN_BUDGET", 200, minimum=8)
CHUNK_TOKEN_OVERLAP = env_int("CHUNK_TOKEN_OVERLAP", 40, minimum=0)

# --- Embeddings --------------------------------------------------------------------------------------
# EMBEDDER picks the semantic channel: "onnx" (offline MiniLM, 384 dims, the default), "openai" (any
# OpenAI-compatible server) or "none" (lexical retrieval only). See knowledge/embedders/.
EMBEDDER = env_str("EMBEDDER", "onnx")
if EMBEDDER not in ("onnx", "openai", "none"):
    raise ImproperlyConfigured(f"EMBEDDER must be onnx, openai or none, got {EMBEDDER!r}")
EMBEDDING_URL = env_str("EMBEDDING_URL")  # e.g. http://127.0.0.1:8080/v1 (the /v1 may be left off)
EMBEDDING_MODEL = env_str("EMBEDDING_MODEL")
EMBEDDING_API_KEY = env_str("EMBEDDING_API_KEY")
if EMBEDDER == "openai" and not (EMBEDDING_URL and EMBEDDING_MODEL):
    raise ImproperlyConfigured("EMBEDDER=openai needs EMBEDDING_URL and EMBEDDING_MODEL")
EMBEDDING_BATCH_SIZE = env_int("EMBEDDING_BATCH_SIZE", 64, minimum=1)  # texts per request / per ONNX run
EMBEDDING_TIMEOUT = env_float("EMBEDDING_TIMEOUT", 30.0)
# After a query embedding fails (error, timeout), questions search full text alone this long before trying the
# embedder again; 0 tries it on every question.
EMBEDDING_FAILURE_COOLDOWN_S = env_float("EMBEDDING_FAILURE_COOLDOWN_S", 30.0)
EMBEDDING_QUERY_INSTRUCTION = env_str("EMBEDDING_QUERY_INSTRUCTION", "")  # e.g. "query: " for e5 models
EMBEDDING_ONNX_THREADS = env_int("EMBEDDING_ONNX_THREADS", 0, minimum=0)  # 0: the core count, at most 4
# The width of the vector columns. Unset: the embedder's own (384 for onnx; probed from the server for
# openai). Set it for openai so startup needs no probe request and a model swap is caught.
MODEL_EMBEDDING_DIM = env_int("MODEL_EMBEDDING_DIM", 0, minimum=0) or None

# --- Findings: consolidation thresholds -----------------------------------------------------------------
# Cosine similarity between a new set/event fact and its nearest live claim: at or above the auto-merge
# threshold with the same object the new fact is a repeat (NOOP); below the borderline floor it is new (ADD);
# in between a model decides. findings.checks verifies floor <= threshold at startup.
CONSOLIDATION_AUTO_MERGE_THRESHOLD = env_float("CONSOLIDATION_AUTO_MERGE_THRESHOLD", 0.9)
CONSOLIDATION_BORDERLINE_FLOOR = env_float("CONSOLIDATION_BORDERLINE_FLOOR", 0.75)

# --- Retrieval -------------------------------------------------------------------------------------------
# The lexical ranking (websearch | or | bm25), chosen by nDCG@10 on the eval data (see the retrieval note).
LEXICAL_STRATEGY = env_str("LEXICAL_STRATEGY", "bm25")
LEXICAL_MIN_IDF = env_float("LEXICAL_MIN_IDF", 0.0)
# Bounds the BM25 pass for queries whose rarer words are still common (at 1M chunks: 20,000 candidates
# took ~0.3 s); the eval sets never reach it (SciFact: 9,444 chunks in all).
LEXICAL_CANDIDATE_CAP = env_int("LEXICAL_CANDIDATE_CAP", 5000, minimum=100)
# BM25 candidates come from the query's lexemes with at least this idf (≈ in at most 1/(e^idf - 1) of the
# chunks); commoner lexemes still add to the score of the chunks found. 0 matches on every lexeme.
# 3.0 ≈ in at most 5 % of the chunks. Fused nDCG@10 against 2.3: SciFact 0.7171 vs 0.7172, Cranfield 0.4278 vs
# 0.4287, CISI 0.4151 vs 0.4188; at 1M chunks with a 2 % filter the channel's p95 fell from 22 to 15 ms (a
# 5-7 % lexeme put 50-70k rows into the candidate bitmap before the ACL cut it to 2 %). Commoner lexemes join them,
# rarest first, while the chunks they hold fit in LEXICAL_CANDIDATE_CAP (knowledge.retrieval.lexical.match_lexemes):
# in a small corpus on one subject most words are common.
LEXICAL_MATCH_MIN_IDF = env_float("LEXICAL_MATCH_MIN_IDF", 3.0)
RETRIEVAL_RRF_K = env_int("RETRIEVAL_RRF_K", 60, minimum=1)
RETRIEVAL_BOTH_BONUS = env_float("RETRIEVAL_BOTH_BONUS", 0.002)  # added to the fused score when both channels agree
RETRIEVAL_PER_DOCUMENT_CAP = env_int("RETRIEVAL_PER_DOCUMENT_CAP", 2, minimum=1)
RETRIEVAL_CHANNEL_DEPTH = env_int("RETRIEVAL_CHANNEL_DEPTH", 50, minimum=10)  # rows each channel contributes
# Readable rows below which the vector channel scans them exactly (an index-only range scan over the caller's
# access classes, ~0.75 µs a row) instead of walking the HNSW graph. At 1M chunks: 20,000 rows exact
# 16 ms vs HNSW 60 ms; 100,000 rows exact 79 ms vs HNSW 34 ms.
RETRIEVAL_EXACT_SCAN_BELOW = env_int("RETRIEVAL_EXACT_SCAN_BELOW", 40000, minimum=0)  # filtered rows
HNSW_EF_SEARCH = env_int("HNSW_EF_SEARCH", 100, minimum=10)
HNSW_MAX_SCAN_TUPLES = env_int("HNSW_MAX_SCAN_TUPLES", 40000, minimum=1000)
GROUNDING_GREP_ROOT = env_str("GROUNDING_GREP_ROOT")
GROUNDING_GREP_MAX_MATCHES = env_int("GROUNDING_GREP_MAX_MATCHES", 50, minimum=1)
GROUNDING_GREP_MAX_FILE_BYTES = env_int("GROUNDING_GREP_MAX_FILE_BYTES", 2 * 1024 * 1024, minimum=1024)
GROUNDING_GREP_TIME_BUDGET_S = env_float("GROUNDING_GREP_TIME_BUDGET_S", 2.0)
GROUNDING_MEMO_TTL_S = env_int("GROUNDING_MEMO_TTL_S", 24 * 3600, minimum=0)
# False (default): when the embedder fails (or answers with a wrong-size or zero vector) searches and answers run
# on full text alone and say so (`lexical_only`). True: they are "retrieval unavailable" (503 / outcome
# unavailable) instead, also with no embedder configured.
RETRIEVAL_REQUIRE_SEMANTIC = env_bool("RETRIEVAL_REQUIRE_SEMANTIC", False)
RETRIEVAL_VECTOR_MIN_SIMILARITY = env_float("RETRIEVAL_VECTOR_MIN_SIMILARITY", 0.2)
RETRIEVAL_HINT_MIN_SIMILARITY = env_float("RETRIEVAL_HINT_MIN_SIMILARITY", 0.45)
# Run the two channels at once on two connections when the caller is not inside a transaction (inside one,
# both must read its snapshot, so they run in turn). Latency becomes the slower channel, not the sum.
RETRIEVAL_PARALLEL_CHANNELS = env_bool("RETRIEVAL_PARALLEL_CHANNELS", True)
# The graph channel (findings.graph): expansion from entities named in the question over the entity graph, fused
# with the other two. Off: searches rank as if the graph did not exist.
RETRIEVAL_GRAPH = env_bool("RETRIEVAL_GRAPH", True)
RETRIEVAL_GRAPH_HOPS = min(env_int("RETRIEVAL_GRAPH_HOPS", 2, minimum=1), 2)
# What a graph rank counts in the reciprocal-rank fusion relative to a lexical or vector rank. A record only the
# second hop reaches has no lexical or vector rank to add; the graph bench reports recall at 1 and 2.
RETRIEVAL_GRAPH_WEIGHT = env_float("RETRIEVAL_GRAPH_WEIGHT", 1.0)
# The weight when the question names an entity exactly and a relation the graph walk followed ("Who does the
# person working on OPS-12 report to?"); a fuzzy (trigram) name gets a share of the step up by its similarity.
RETRIEVAL_GRAPH_WEIGHT_CONFIDENT = env_float("RETRIEVAL_GRAPH_WEIGHT_CONFIDENT", 2.0)
LEXICAL_IDF = env_str("LEXICAL_IDF", "stats")  # exact (capped per-query counts in the caller's scope) | stats
LEXICAL_DF_CAP = env_int("LEXICAL_DF_CAP", 5000, minimum=10)

# --- Model endpoint (findings extraction and verdicts, chat answers) -------------------------------------
# Any OpenAI-compatible chat endpoint. FINDINGS_EXTRACTOR=openai and ANSWER_PROVIDER=openai need it; with LLM_URL
# set, borderline consolidation verdicts also go to that model (without, they are written as ADD and queued for
# review).
LLM_URL = env_str("LLM_URL")
LLM_MODEL = env_str("LLM_MODEL")
LLM_API_KEY = env_str("LLM_API_KEY")
LLM_TIMEOUT = env_float("LLM_TIMEOUT", 60.0)  # seconds per model call

# --- Findings: extraction ----------------------------------------------------------------------------------
# FINDINGS_EXTRACTOR picks what proposes facts after ingestion: "patterns" (offline, deterministic, the
# default), "openai" (the model endpoint above) or "none" (no claims).
FINDINGS_EXTRACTOR = env_str("FINDINGS_EXTRACTOR", "patterns")
if FINDINGS_EXTRACTOR not in ("patterns", "openai", "none"):
    raise ImproperlyConfigured(f"FINDINGS_EXTRACTOR must be patterns, openai or none, got {FINDINGS_EXTRACTOR!r}")
if FINDINGS_EXTRACTOR == "openai" and not (LLM_URL and LLM_MODEL):
    raise ImproperlyConfigured("FINDINGS_EXTRACTOR=openai needs LLM_URL and LLM_MODEL")
FINDINGS_EXTRACT_MAX_RETRIES = env_int("FINDINGS_EXTRACT_MAX_RETRIES", 3, minimum=0)

# --- Chat: grounded answers ----------------------------------------------------------------------------------
# ANSWER_PROVIDER: "extractive" (offline, sentences copied from the evidence, the default without a model) or
# "openai" (the model decides to search through the search_knowledge tool; the default when LLM_URL is set).
ANSWER_PROVIDER = env_str("ANSWER_PROVIDER", "openai" if (LLM_URL and LLM_MODEL) else "extractive")
if ANSWER_PROVIDER not in ("extractive", "openai"):
    raise ImproperlyConfigured(f"ANSWER_PROVIDER must be extractive or openai, got {ANSWER_PROVIDER!r}")
if ANSWER_PROVIDER == "openai" and not (LLM_URL and LLM_MODEL):
    raise ImproperlyConfigured("ANSWER_PROVIDER=openai needs LLM_URL and LLM_MODEL")
ANSWER_TOP_K = env_int("ANSWER_TOP_K", 8, minimum=1)  # evidence chunks retrieved per (sub-)question
# ANSWERABILITY_JUDGE: "rules" (the default): the wording rules; "reader": the reader trained by `make train-reader`
# (chat/reader, int8 ONNX, sha256-checked; opt-in until it measures better than the rules on SQuAD 2.0 dev, see
# docs/answering.md; without its files the rules answer); "learned": a logistic regression over the rules' readings.
ANSWERABILITY_JUDGE = env_str("ANSWERABILITY_JUDGE", "rules")
if ANSWERABILITY_JUDGE not in ("reader", "learned", "rules"):
    raise ImproperlyConfigured(f"ANSWERABILITY_JUDGE must be reader, learned or rules, got {ANSWERABILITY_JUDGE!r}")
ANSWER_CONTEXT_TOKENS = env_int("ANSWER_CONTEXT_TOKENS", 3000, minimum=100)
# An answerable question's best ANSWER_WIDEN_TOP chunks are joined with their neighbours in the same record, up
# to ANSWER_WIDEN_MAX_TOKENS each (chat.retrieval.evidence_widen); 0 turns widening off.
ANSWER_WIDEN_TOP = env_int("ANSWER_WIDEN_TOP", 3, minimum=0)
ANSWER_WIDEN_MAX_TOKENS = env_int("ANSWER_WIDEN_MAX_TOKENS", 3 * CHUNK_TOKEN_BUDGET, minimum=1)
ANSWER_MAX_TOOL_ROUNDS = env_int("ANSWER_MAX_TOOL_ROUNDS", 2, minimum=1)
ANSWER_HISTORY_TURNS = env_int("ANSWER_HISTORY_TURNS", 6, minimum=0)
ANSWER_CACHE_ENABLED = env_bool("ANSWER_CACHE_ENABLED", True)
# Cosine similarity between two questions' embeddings at which a cached answer is served (same scope only).
ANSWER_CACHE_SIMILARITY = env_float("ANSWER_CACHE_SIMILARITY", 0.95)
ANSWER_CACHE_TTL_S = env_int("ANSWER_CACHE_TTL_S", 7 * 24 * 3600, minimum=0)

# --- Chat: the refusal gate (chat/gate.py) ---------------------------------------------------------------------
# Before generating, the gate decides whether the evidence can support an answer at all. Tuned on SciFact claims
# (in corpus) against the other collections' questions (out of corpus) with benchmarks/chat/answers.py; full run (onnx
# embedder): answer rate 0.91, refusal 0.96; full-text only: 0.93 / 0.94.
# The semantic bar: cosine similarity of the question and the closest evidence chunk. A property of the
# embedding model: 0.42 is calibrated for the bundled MiniLM (EMBEDDER=onnx; in-corpus questions' 5th percentile
# 0.42, out-of-corpus 95th percentile 0.37). With another model it defaults to 0 — the gate then applies only
# its lexical rules — until set from that model's `make bench`.
ANSWER_GATE_MIN_SIMILARITY = env_float("ANSWER_GATE_MIN_SIMILARITY", 0.42 if EMBEDDER == "onnx" else 0.0)
# Evidence between the similarity bar and this one must also hold one of the question's phrases (two adjacent
# key terms, "boundary layer") in a top chunk: two weak signals together are what an out-of-corpus question on
# a neighbouring topic looks like. On SciFact's tenant (onnx embedder) the 16 other-collection questions that
# still got answers all had a best similarity under 0.53, 14 with no phrase; of SciFact's 485 answered claims,
# 5 % are under 0.52 and 46 have no phrase, but only 4 are both under 0.48. Only where nothing after the gate
# checks an answer slot (statements, keyword queries, long descriptions, questions asking for a description;
# chat.answerability.slot_checked): on SQuAD 2.0's questions asking for a typed value it cost as many span hits
# as it gained refusals of unanswerable ones (all questions then: 0.748 → 0.722, 0.381 → 0.413).
# A property of the embedding model like the bar above: 0 (off) for other models until calibrated.
ANSWER_GATE_PHRASELESS_MIN_SIMILARITY = env_float("ANSWER_GATE_PHRASELESS_MIN_SIMILARITY",
                                                  0.48 if EMBEDDER == "onnx" else 0.0)
# With the similarity bar met, the share of the question's (rarity-weighted) key terms one top chunk must hold.
ANSWER_GATE_SEMANTIC_MIN_COVERAGE = env_float("ANSWER_GATE_SEMANTIC_MIN_COVERAGE", 0.15)
# A query of at least this many key terms is a description (a pasted abstract, a paragraph stating a need), not
# a question. No chunk holds a fixed share of so many words: with the semantic bar the share asked of it falls
# with its length, and its evidence must instead be close in meaning at ANSWER_GATE_PHRASELESS_MIN_SIMILARITY
# (chat.gate._semantic_refusal); a name it mentions that no record holds is one detail among many, and only
# when none of its names is in the records is it about something they do not hold (chat.retrieval). On the three
# collections (onnx embedder) every in-corpus query this long had a best similarity of 0.51 or more and every
# out-of-corpus one 0.51 or less (one at 0.51, answered already); 20 is where CISI's pasted abstracts begin, and
# the only SciFact claims and Cranfield queries this long were answered either way.
ANSWER_GATE_DESCRIPTION_MIN_TERMS = env_int("ANSWER_GATE_DESCRIPTION_MIN_TERMS", 20, minimum=2)
# The lexical rules (no semantic bar): the share of the question's key terms one top chunk must contain ...
ANSWER_GATE_MIN_COVERAGE = env_float("ANSWER_GATE_MIN_COVERAGE", 0.3)
# ... and the share of its adjacent key-term pairs ("panel flutter") it must also contain, unless coverage
# reaches ANSWER_GATE_STRONG_COVERAGE: an out-of-corpus question often matches a corpus's common words one by
# one ("experimental", "study", "effect"), but rarely its phrases.
ANSWER_GATE_MIN_PHRASE = env_float("ANSWER_GATE_MIN_PHRASE", 0.1)
ANSWER_GATE_STRONG_COVERAGE = env_float("ANSWER_GATE_STRONG_COVERAGE", 0.8)
# Without channel agreement, near-complete coverage instead: a lexical-only hit on half the words is often a
# different topic sharing vocabulary.
ANSWER_GATE_SOLO_COVERAGE = env_float("ANSWER_GATE_SOLO_COVERAGE", 0.8)
# Least fused score of the best evidence. With RRF (k=60) a rank-40 hit in one channel scores ~0.01.
ANSWER_GATE_MIN_SCORE = env_float("ANSWER_GATE_MIN_SCORE", 0.01)
# A fused score at or above this is full marks in the confidence blend: rank 1 in both channels.
ANSWER_GATE_STRONG_SCORE = 2 / (RETRIEVAL_RRF_K + 1)
# How many of the best-ranked items count as "the top evidence".
ANSWER_GATE_TOP_K = env_int("ANSWER_GATE_TOP_K", 3, minimum=1)
# Below this confidence a refusal is worth one repeat search with a reformulated query.
ANSWER_GATE_RETRY_BELOW = env_float("ANSWER_GATE_RETRY_BELOW", 0.6)

# --- Retrieval: hints about hidden records (knowledge/retrieval/hints.py) ------------------------------------
# Share of the question's key terms a record the caller cannot read must hold to earn a content-free hint (with
# RETRIEVAL_HINT_MIN_SIMILARITY above as the semantic bar).
RETRIEVAL_HINT_MIN_COVERAGE = env_float("RETRIEVAL_HINT_MIN_COVERAGE", 0.6)
# A hint needs a real question: at least this many common (non-stop) words; rare words and numbers never
# count (knowledge/retrieval/hints.py), so a guessed code name or figure cannot confirm itself.
RETRIEVAL_HINT_MIN_TOPIC_WORDS = env_int("RETRIEVAL_HINT_MIN_TOPIC_WORDS", 3, minimum=1)
# Hidden-record hints one caller's answers may carry per hour (chat/answering.py); past it, no hint.
ANSWER_HINTS_PER_HOUR = env_int("ANSWER_HINTS_PER_HOUR", 20, minimum=0)
