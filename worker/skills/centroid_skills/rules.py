"""Dimensions the generators draw with, all derived from the loaded rule set (nm, on grid).

Nothing here is a process number: every value is a rule lookup (see
:class:`centroid_skills.tech.Technology`), the tightest value other rules imply, or 0.
"""

from __future__ import annotations

from dataclasses import dataclass

from centroid_skills.tech import Technology


@dataclass(frozen=True)
class DrawRules:
    g: int  # grid
    cont: int  # contact cut size
    cs: int  # contact spacing
    act_ct: int  # active (diffusion) enclosure of contact
    tap_ct: int  # tap diffusion enclosure of contact
    poly_ct: int  # poly enclosure of contact
    m1_ct: int  # metal1 enclosure of contact
    m1w: int
    m1s: int
    v1: int  # via1 cut size
    v1s: int
    m1_v1: int
    m2_v1: int
    m2w: int
    m2s: int
    ct_poly: int  # contact (on diffusion) to poly spacing
    ct_act: int  # contact (on poly) to active spacing
    poly_w: int
    poly_s: int
    act_w: int
    tap_w: int
    endcap: int  # poly extension past active
    sd_ext: int  # active extension past poly
    poly_act: int  # poly to (unrelated) active spacing
    v1_ct: int
    v1_poly: int
    v1_act: int
    pcm_ct: int  # poly-contact marker (e.g. npc) enclosure of contact
    pcm_w: int
    pcm_act: int  # poly-contact marker spacing to active


def cover(tech: Technology, outer: str, inner: str) -> int:
    """Margin by which ``outer`` must cover ``inner`` (enclosure or extension rules)."""
    return max(tech.enc(outer, inner), tech.ext(outer, inner))


_CACHE: dict[int, tuple[Technology, DrawRules]] = {}


def draw_rules(tech: Technology) -> DrawRules:
    hit = _CACHE.get(id(tech))
    if hit is not None and hit[0] is tech:
        return hit[1]
    tap = "tap" if tech.has("tap") else "active"
    r = DrawRules(
        g=tech.grid_nm,
        cont=tech.cut_size("contact"),
        # two cuts closer than one grid step would merge into one (wrong-size) cut
        cs=max(tech.space("contact"), tech.grid_nm),
        act_ct=cover(tech, "active", "contact"),
        tap_ct=cover(tech, tap, "contact"),
        poly_ct=cover(tech, "poly", "contact"),
        m1_ct=cover(tech, "metal1", "contact"),
        m1w=tech.width("metal1"),
        m1s=max(tech.space("metal1"), tech.grid_nm),
        v1=tech.cut_size("via1"),
        v1s=max(tech.space("via1"), tech.grid_nm),
        m1_v1=cover(tech, "metal1", "via1"),
        m2_v1=cover(tech, "metal2", "via1"),
        m2w=tech.width("metal2"),
        m2s=max(tech.space("metal2"), tech.grid_nm),
        ct_poly=tech.space("contact", "poly"),
        ct_act=tech.space("contact", "active"),
        poly_w=tech.width("poly"),
        poly_s=max(tech.space("poly"), tech.grid_nm),
        act_w=tech.width("active"),
        tap_w=tech.width(tap),
        endcap=tech.ext("poly", "active"),
        sd_ext=tech.ext("active", "poly"),
        poly_act=tech.space("poly", "active"),
        v1_ct=tech.space("via1", "contact"),
        v1_poly=tech.space("via1", "poly"),
        v1_act=tech.space("via1", "active"),
        pcm_ct=cover(tech, "poly_contact_marker", "contact") if tech.has("poly_contact_marker") else 0,
        pcm_w=tech.width("poly_contact_marker") if tech.has("poly_contact_marker") else 0,
        pcm_act=tech.space("poly_contact_marker", "active") if tech.has("poly_contact_marker") else 0,
    )
    _CACHE[id(tech)] = (tech, r)
    return r
