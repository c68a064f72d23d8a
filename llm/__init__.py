"""Language models that answer with JSON matching a schema, for extraction.

One abstract method, ``StructuredModel.ask``: the user's own ``claude``
CLI, Anthropic's Messages API, or a local Ollama server; ``Chain`` tries
them in the configured order.
"""
