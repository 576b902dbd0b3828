"""Lowering rules: Indexing and generation ops: tile, gather/scatter variants, cumsum, one-hot, top-k, sort, range, fill."""
