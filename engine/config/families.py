"""Which model family a provider's work comes from (`anthropic`, `openai`, `google`, …): review picks a
reviewer of another family than the lane's writers (`decisions.review.run`), and a fix hint names the key
of the family's API (`config.provider_errors`).

Apart from `config.providers` because aider's family is the one of the model aider itself would run
(`config.aider_model`), which reads the presets in turn.
"""

from __future__ import annotations

from lanes_tui.engine.config.aider_model import aider_family_model
from lanes_tui.engine.config.providers import ProviderConfig

#: A model name's start → its family, tried on the whole name and after each `/` (`openrouter/anthropic/…`).
#: Bare `sonnet`, `opus`, `haiku`, `4o`, `flash` are aider's own aliases for those families' models.
MODEL_FAMILIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("anthropic", ("claude", "anthropic/", "sonnet", "opus", "haiku")),
    ("openai", ("gpt", "o1", "o3", "o4", "openai/", "4o", "chatgpt")),
    ("google", ("gemini", "google/", "flash")),
)


def model_family(model: str) -> str | None:
    """The family a model name belongs to (`claude-…` → anthropic, `gpt-…` → openai), or None if unknown."""
    name = model.strip().lower()
    candidates = [name] + [name.split("/", i)[-1] for i in range(1, name.count("/") + 1)]
    for family, prefixes in MODEL_FAMILIES:
        if any(c.startswith(prefixes) for c in candidates):
            return family
    return None


def provider_family(provider: ProviderConfig) -> str:
    """The provider's family: its `family` when set (preset or `[providers.NAME] family`), else the
    family of its model (aider runs whichever model it is given), else its own name: an unknown CLI is
    a family of its own, so it never counts as the same family as a known one by accident."""
    if provider.family:
        return provider.family
    model = provider.model
    if not model:  # aider's own choice: read where aider reads it (`config.aider_model`)
        model = aider_family_model(provider)
    return model_family(model) or provider.name
