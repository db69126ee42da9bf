"""`python -m turnback.lsp`: the sidecar on stdio (the same as `turnback serve`)."""

from .stdio import serve

serve()
