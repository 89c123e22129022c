"""The stages of a run, one package per kind; each kind is a small interface (a Protocol in its
package), a Registry of implementations chosen by name from TOML, and plugins by entry point:

    chunkers     file text -> chunks with line ranges                        [chunker]
    tokenizers   how text becomes terms and a query becomes a search          [tokenizer]
    lexical      BM25 over chunk text (FTS5, rank-bm25, bm25s)                [lexical]
    embedders    text -> unit vectors, behind a persistent cache              [embedder]
    vector       nearest chunks by cosine (sqlite-vec, numpy)                 [vector]
    fusion       the two legs' candidate lists -> one ranked list             [fusion]
    postprocess  a fused list -> what memory_search returns                   [[postprocess]]
"""
