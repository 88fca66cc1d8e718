//! A resistor's bar width said by its PDK cell's name. SKY130's poly resistors come as
//! fixed-width cells — `sky130_fd_pr__res_high_po_0p35`, `…_xhigh_po_5p73` — whose width
//! (µm, `p` for the decimal point) is only in the name: the schematic writes `L=` alone.

/// The width (metres) a model name ends with: `_<digits>p<digits>` read as micrometres.
pub(super) fn width_in_model_name(model: &str) -> Option<f64> {
    let (_, suffix) = model.rsplit_once('_')?;
    let (whole, fraction) = suffix.split_once(['p', 'P'])?;
    let digits = |text: &str| !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit());
    if !digits(whole) || !digits(fraction) {
        return None;
    }
    let micrometres: f64 = format!("{whole}.{fraction}").parse().ok()?;
    (micrometres > 0.0).then_some(micrometres * 1e-6)
}

#[cfg(test)]
mod tests {
    use super::width_in_model_name;

    #[test]
    fn the_width_is_the_names_last_part_with_p_for_the_point() {
        let width = |name: &str| width_in_model_name(name).map(|w| (w * 1e9).round() / 1e3);
        assert_eq!(width("sky130_fd_pr__res_high_po_0p35"), Some(0.35));
        assert_eq!(width("SKY130_FD_PR__RES_XHIGH_PO_5P73"), Some(5.73));
        assert_eq!(width("sky130_fd_pr__res_high_po"), None);
        assert_eq!(width("ppolyf_u_1k"), None);
        assert_eq!(width("rppolywo_m"), None);
        assert_eq!(width("res_0p"), None);
        assert_eq!(width("res_0p00"), None);
    }
}
