"""The reader: a small cross-encoder of our own (all-MiniLM-L6-v2 fine-tuned on SQuAD, int8 ONNX) that reads a
question against a passage window and says whether the window answers it, how likely that is, and where the
answer span is.

`windows` and `encoding` are plain Python and NumPy (the training code in `training/reader/` imports them, so
what the model was trained on is exactly what it reads at run time); `model` loads the vendored ONNX file.
"""
