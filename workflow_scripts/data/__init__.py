"""Data stage: from upstream downloads to the files a training run reads.

    fetch        downloads (or a local mirror / licensed copy), checksums
    locations    the data mirror and licensed-data directory; which licensed files are missing (pure)
    corpus_spec  what a `corpora` entry means: splits, parts, references, holdouts (pure)
    formats      readers of the part formats (plain, tsv, aspec, sgml, iwslt_xml, ...)
    extract      one split of one language as plain text (rule extract)
    preprocess   normalise, tokenise, clean a parallel split
    segment      Chinese and Japanese word segmenters (jieba, thulac, snownlp, fugashi)
    bpe          subword-nmt codes, vocabularies, application; the joint vocabulary
    chars        character-level sources and targets (char2word)
    lattice      word / subword lattices and their model inputs
    compression  ESC compression pairs (denoising and supervised) and compression quality
    parallel     order-preserving process pools for the line-by-line steps
"""
