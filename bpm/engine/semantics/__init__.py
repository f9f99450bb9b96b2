"""Node semantics: what a token does at each kind of node, inside one transaction.

Every function here takes the transaction and the compiled graph, never the engine: it
decides and stages changes, and returns what the job should do next.
"""
