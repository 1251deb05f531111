"""Agent cores shipped with the SDK adapter: ``demo`` (scripted, offline) and ``claude``
(the Claude Agent SDK). Both are registered like a third party's would be."""
