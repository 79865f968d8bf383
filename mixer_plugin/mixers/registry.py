"""The token-mixer registry and the per-layer spec grammar.

A *token mixer* is anything that takes the place of self- or cross-attention in a
Transformer layer.  Every mixer is registered under a name with an options dataclass
and the roles it can fill.  Layers never dispatch on mixer names: they build a
:class:`MixerContext` and call :func:`build_mixer`.

Spec grammar (one flag per role, e.g. ``--encoder-mixers``)::

    SPEC_LIST := ITEM ("," ITEM)*
    ITEM      := NAME (":" KEY "=" VALUE)* ("*" COUNT)?

``ngram:n=3*2,ngram:n=5*2,attn*2`` gives six layers.  A single item is broadcast to
every layer; otherwise the list must have exactly one entry per layer.
"""

import dataclasses
import enum
import typing
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence, Type, TypeVar, Union

import torch.nn as nn


class MixerSpecError(ValueError):
    """A bad mixer spec.  The message is one line and names the offending flag."""


class Role(enum.Enum):
    ENCODER_SELF = "encoder_self"
    DECODER_SELF = "decoder_self"
    DECODER_CROSS = "decoder_cross"

    @property
    def flag(self) -> str:
        return {
            Role.ENCODER_SELF: "--encoder-mixers",
            Role.DECODER_SELF: "--decoder-mixers",
            Role.DECODER_CROSS: "--decoder-cross-mixers",
        }[self]

    @property
    def causal(self) -> bool:
        return self is Role.DECODER_SELF


SELF_ROLES = frozenset({Role.ENCODER_SELF, Role.DECODER_SELF})
ALL_ROLES = frozenset(Role)


@dataclass(frozen=True)
class MixerContext:
    """What a layer knows about the slot a mixer fills."""

    role: Role
    layer_index: int
    embed_dim: int
    kv_dim: int  # width of keys/values: the encoder's for cross-attention
    num_heads: int  # the layer's --*-attention-heads, the default for `heads`
    # --attention-dropout: every mixer applies it to what it mixes by (the attention
    # probabilities; multiNN: each head's window slots, its analogue of them)
    attention_dropout: float
    # builds the stock fairseq MultiheadAttention for this slot (used by `attn`)
    build_stock: Callable[[], nn.Module]
    # layers of this stack (--encoder-layers / --decoder-layers); None outside a model
    num_layers: Optional[int] = None
    # --activation-dropout: after a mixer's own activation, where it has one (multiNN's
    # ReLU), as fairseq's FFN applies it after fc1's
    activation_dropout: float = 0.0


@dataclass(frozen=True)
class NoOptions:
    pass


@dataclass(frozen=True)
class MixerEntry:
    name: str
    factory: Callable[[MixerContext, object], nn.Module]
    options: Type
    roles: FrozenSet[Role]


MIXER_REGISTRY: Dict[str, MixerEntry] = {}

# a mixer class or factory function, returned unchanged by register_mixer
_Factory = TypeVar("_Factory", bound=Callable[..., nn.Module])


def register_mixer(
    name: str, options: Type = NoOptions, roles: Iterable[Role] = SELF_ROLES
) -> Callable[[_Factory], _Factory]:
    """Class or function decorator: ``factory(ctx, opts) -> nn.Module``."""

    def deco(factory: _Factory) -> _Factory:
        if name in MIXER_REGISTRY:
            raise ValueError(f"mixer {name!r} is registered twice")
        MIXER_REGISTRY[name] = MixerEntry(name, factory, options, frozenset(roles))
        return factory

    return deco


def option(default: Any, help: str, key: Optional[str] = None, choices: Optional[Sequence[str]] = None) -> Any:
    """A field of a mixer's options dataclass.  ``key`` is its name in the spec
    string when that differs from the field name (``global`` is a keyword)."""
    return field(default=default, metadata={"help": help, "key": key, "choices": choices})


def check_positive(opts: object, *names: str) -> Optional[str]:
    """For ``validate()``: the first named option that is set and < 1, as a message."""
    for name in names:
        value = getattr(opts, name)
        if value is not None and value < 1:
            return f"option {name} must be >= 1, got {value}"
    return None


def spec_key(f: dataclasses.Field) -> str:
    return f.metadata.get("key") or f.name


@dataclass(frozen=True)
class LayerMixer:
    """One parsed spec item, resolved for one layer."""

    flag: str
    name: str
    options: object

    def describe(self) -> str:
        entry = MIXER_REGISTRY[self.name]
        parts = [self.name]
        for f in fields(entry.options):
            value = getattr(self.options, f.name)
            if value != f.default:
                parts.append(f"{spec_key(f)}={_format_value(value)}")
        return ":".join(parts)


def _format_value(value: object) -> str:
    if isinstance(value, bool):
        return str(int(value))
    return str(value)


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _coerce(flag: str, name: str, f: dataclasses.Field, text: str) -> Union[bool, int, float, str]:
    key = spec_key(f)
    hint = typing.get_type_hints(MIXER_REGISTRY[name].options)[f.name]
    base = typing.get_args(hint)[0] if typing.get_origin(hint) is typing.Union else hint
    try:
        if base is bool:
            low = text.lower()
            if low not in _TRUE | _FALSE:
                raise ValueError
            value = low in _TRUE
        elif base is int:
            value = int(text)
        elif base is float:
            value = float(text)
        else:
            value = text
    except ValueError:
        raise MixerSpecError(f"{flag}: {name} option {key}={text!r} is not a valid {base.__name__}") from None
    choices = f.metadata.get("choices")
    if choices is not None and value not in choices:
        raise MixerSpecError(f"{flag}: {name} option {key}={text!r} must be one of {', '.join(choices)}")
    return value


def parse_item(flag: str, item: str) -> LayerMixer:
    parts = item.strip().split(":")
    name = parts[0].strip()
    if name not in MIXER_REGISTRY:
        known = ", ".join(sorted(MIXER_REGISTRY))
        raise MixerSpecError(f"{flag}: unknown mixer {name!r} (known: {known})")
    entry = MIXER_REGISTRY[name]
    by_key = {spec_key(f): f for f in fields(entry.options)}
    values = {}
    for part in parts[1:]:
        key, eq, text = part.partition("=")
        key = key.strip()
        if not eq or not key:
            raise MixerSpecError(f"{flag}: expected KEY=VALUE in {item!r}, got {part!r}")
        if key not in by_key:
            known = ", ".join(by_key) or "none"
            raise MixerSpecError(f"{flag}: mixer {name} has no option {key!r} (options: {known})")
        f = by_key[key]
        values[f.name] = _coerce(flag, name, f, text.strip())
    options = entry.options(**values)
    validate = getattr(options, "validate", None)
    if validate is not None:
        problem = validate()
        if problem:
            raise MixerSpecError(f"{flag}: {name}: {problem}")
    return LayerMixer(flag, name, options)


def parse_mixer_list(flag: str, text: str) -> List[LayerMixer]:
    """Parse a spec list without knowing the layer count (syntax, names, options)."""
    if text is None or not str(text).strip():
        raise MixerSpecError(f"{flag}: empty mixer list")
    out: List[LayerMixer] = []
    for raw in str(text).split(","):
        item, star, count = raw.partition("*")
        repeat = 1
        if star:
            try:
                repeat = int(count)
            except ValueError:
                repeat = 0
            if repeat < 1:
                raise MixerSpecError(f"{flag}: repeat count in {raw.strip()!r} must be a positive integer")
        out.extend([parse_item(flag, item)] * repeat)
    return out


def resolve_layers(flag: str, text: str, num_layers: int, layers_flag: str) -> List[LayerMixer]:
    """Parse and broadcast a spec list to exactly ``num_layers`` entries."""
    mixers = parse_mixer_list(flag, text)
    if len(mixers) == 1:
        return mixers * num_layers
    if len(mixers) != num_layers:
        raise MixerSpecError(
            f"{flag}: {len(mixers)} mixers given but {layers_flag} is {num_layers} "
            f"(give one mixer for all layers or exactly one per layer)"
        )
    return mixers


def check_role(spec: LayerMixer, role: Role, layer: Optional[int] = None) -> None:
    """MixerSpecError unless the mixer of ``spec`` can fill ``role`` (in layer ``layer``)."""
    entry = MIXER_REGISTRY[spec.name]
    if role not in entry.roles:
        can = ", ".join(sorted(r.value for r in entry.roles))
        where = f" (layer {layer})" if layer is not None else ""
        raise MixerSpecError(
            f"{spec.flag}: mixer {spec.name} cannot be used as {role.value}{where}; it supports: {can}"
        )


def build_mixer(spec: LayerMixer, ctx: MixerContext) -> nn.Module:
    entry = MIXER_REGISTRY[spec.name]
    check_role(spec, ctx.role, ctx.layer_index)
    try:
        return entry.factory(ctx, spec.options)
    except MixerSpecError as e:
        raise MixerSpecError(f"{spec.flag} (layer {ctx.layer_index}): {e}") from None
