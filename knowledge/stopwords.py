"""The English stopword list: words that carry no topic of their own, question words included ("what", "list",
"explain"). One list for every place that picks a question's key words — the keyword-grep tier
(knowledge/retrieval/grep.py), the refusal gate, the extractive answerer and the groundedness check (chat/terms.py)
— so they agree on what a question is about.
"""

from __future__ import annotations

STOPWORDS: frozenset[str] = frozenset(
    """
    a about above after again against all also am an and any are aren as at be because been before being
    below between both but by can cannot could couldn did didn do does doesn doing don down during each
    either else ever every few for from further get gets got had hadn has hasn have haven having he her here
    hers herself him himself his how however i if in into is isn it its itself just let lets like made make
    many may me might more most much must mustn my myself neither no nor not now of off on once only or other
    our ours ourselves out over own per please same shall shan she should shouldn so some such tell than
    that the their theirs them themselves then there these they this those through to too under until up
    upon us very via was wasn we were weren what whats when where whether which while who whom whose why
    will with within without won would wouldn yes yet you your yours yourself yourselves
    s t d ll m re ve y
    describe explain give know list show find say said says
    """.split()
)
