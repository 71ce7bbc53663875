"""The text models (a causal language model and a sentence-embedding model), in one place.

Use `apps.textmodels.registry`: `causal_lm()` (tokenizer + model), `embed(texts)`,
`causal_lm_info()` / `embedding_info()` (name, path, languages, int8, without loading), and
`ModelInfo.label`, the name to store beside every value a model computed.
"""
