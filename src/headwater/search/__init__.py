"""Search across the indexes: the caller's principals, the fan-out, fusion, snippets.

``service`` runs a permission-filtered search on every configured index and fuses the
results; ``fusion`` merges a vector and a keyword ranking, purely; ``terms`` decides which
keyword hits share an informative word with the query. Sinks never import this package.
"""
