"""The entity graph: findings' entities and current claims as nodes and edges, record links between documents,
entity resolution (aliases, reversible merges), query entity linking, the retrieval channel and an entity's
neighbourhood (`kb_graph_query`). Every read applies the caller's access in SQL (findings.sql.graph)."""
