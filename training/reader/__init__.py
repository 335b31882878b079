"""Training the reader (chat/reader): examples from SQuAD train, fine-tuning, ONNX export. See README.md here."""
