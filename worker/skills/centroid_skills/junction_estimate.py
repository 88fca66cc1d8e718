"""Source/drain junctions of a MOSFET as a schematic tool estimates them (``sim.schematic``
with ``junctions: "estimated"``): AD/AS/PD/PS from W, nf and the contacted diffusion
lengths of the rule set, the way a PDK's schematic symbols do (e.g. the SKY130 xschem
symbols: ``int((nf+1)/2)`` drain and ``int((nf+2)/2)`` source diffusions of ``W/nf`` by
0.29 µm each).

Each finger is ``W/nf`` wide; the ``nf + 1`` diffusions alternate S D S D …:

* an inner diffusion (between two gates) holds one contact column and keeps the
  contact-to-gate spacing on both sides: ``contact + 2 · contact-to-poly``;
* an end diffusion keeps it on the gate side and the diffusion's enclosure of the
  contact on the other: ``contact + contact-to-poly + active enclosure of contact``, at
  least the diffusion's extension past the gate;
* nf odd: source and drain each have ``(nf − 1)/2`` inner diffusions and one end;
  nf even: the drain has the ``nf/2`` inner ones only (the smaller junction on the
  output, as layouts draw it), the source ``nf/2 − 1`` inner ones and both ends.

Area = Σ finger width · length; perimeter = Σ 2 · (finger width + length) (the whole
outline of each diffusion, gate edges included, as KLayout's device extraction gives
PS/PD and the xschem symbols write them). Values per instance (ngspice multiplies by
``m``), in µm and µm². Every length comes from the rule set: nothing here is a process
number.
"""

from __future__ import annotations

from dataclasses import dataclass

from centroid_skills.rules import draw_rules
from centroid_skills.tech import Technology


@dataclass(frozen=True)
class DiffusionLengths:
    """The contacted diffusion lengths (µm) along the channel."""

    inner_um: float
    end_um: float

    @classmethod
    def of(cls, tech: Technology) -> DiffusionLengths:
        r = draw_rules(tech)
        inner = r.cont + 2 * r.ct_poly
        end = max(r.cont + r.ct_poly + r.act_ct, r.sd_ext)
        return cls(inner_um=inner / 1000.0, end_um=end / 1000.0)


@dataclass(frozen=True)
class Junctions:
    """AD, AS (µm²), PD, PS (µm) of one instance."""

    ad_um2: float
    as_um2: float
    pd_um: float
    ps_um: float


def diffusion_counts(nf: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """((drain inner, drain ends), (source inner, source ends)) for ``nf`` fingers."""
    if nf < 1:
        raise ValueError(f"nf = {nf}: a MOSFET has at least one finger")
    if nf % 2:
        half = (nf - 1) // 2
        return (half, 1), (half, 1)
    return (nf // 2, 0), (nf // 2 - 1, 2)


def estimate(w_um: float, nf: int, lengths: DiffusionLengths) -> Junctions:
    """The junctions of a device ``w_um`` wide in total over its ``nf`` fingers."""
    finger = w_um / nf
    (d_in, d_end), (s_in, s_end) = diffusion_counts(nf)

    def area(inner: int, ends: int) -> float:
        return finger * (inner * lengths.inner_um + ends * lengths.end_um)

    def perimeter(inner: int, ends: int) -> float:
        return (2 * (inner + ends) * finger
                + 2 * (inner * lengths.inner_um + ends * lengths.end_um))

    return Junctions(ad_um2=area(d_in, d_end), as_um2=area(s_in, s_end),
                     pd_um=perimeter(d_in, d_end), ps_um=perimeter(s_in, s_end))
