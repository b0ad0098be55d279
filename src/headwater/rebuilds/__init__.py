"""Blue-green rebuilds over a runtime: build, verify, switch, roll back and retire.

``orchestrate`` drives generations through their states with the runtime's parts (the
manifest's generations, the indexes' sinks and indexers); which sink, chunker and
embedder a generation uses is the indexing layer's (``indexer.generations``). The lower
layers it drives never import it.
"""
