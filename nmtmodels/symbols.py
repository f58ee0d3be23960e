"""Special symbols shared by every vocabulary (torch-free, so data tools can import it).

Ids are fixed so that search, models and vocabularies agree.
"""
PAD, BOS, EOS, UNK = "<pad>", "<s>", "</s>", "<unk>"
PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
SPECIAL_SYMBOLS = (PAD, BOS, EOS, UNK)
# Character-level data: an original space is written as this symbol.
SPACE_SYMBOL = "\u2581"
