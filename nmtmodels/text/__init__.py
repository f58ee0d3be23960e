"""Text in and out: preprocessing (normalise, tokenise, segment, subwords), postprocessing, SentencePiece, model packages, scoring."""
