* Centroid's open-loop AC testbench of ALIGN's telescopic_ota on SKY130 (ours).
* The tail mirror's reference node `id` is an inner net of ALIGN's subcircuit (no port):
* Iref feeds it by its hierarchical name `xdut.id` (ngspice names a subcircuit instance's
* inner nets <instance>.<net> once it flattens the deck; the extracted netlist keeps the
* net's name), so the netlist is used as ALIGN gives it.
* 1.8 V supply, 50 uA reference (1:1 tail mirror), inputs at 1.0 V common mode, cascode
* gates at 1.3 V (n) and 0.6 V (p), an ideal common-mode feedback on the PMOS current
* sources' gate holding the outputs' mean at 1.1 V, 50 fF on each output; the gain is
* the differential output over the differential input (0.5 V AC on each side).
Vsupply vdd 0 1.8
Iref vdd xdut.id 50u
Vbn vbiasn 0 1.3
Vbp1 vbiasp1 0 0.6
Bcmfb vbiasp2 0 V=0.8+20*((v(voutp)+v(voutn))/2-1.1)
Xdut vbiasn vbiasp1 vbiasp2 vinn vinp voutn voutp vdd 0 telescopic_ota
Cloadp voutp 0 50f
Cloadn voutn 0 50f
Ediff vod 0 voutp voutn 1
Vcm cm 0 1.0
Vinp vinp cm dc 0 ac 0.5
Vinn vinn cm dc 0 ac -0.5
.ac dec 20 1 10G
.meas ac gain_db find vdb(vod) at=1
.meas ac ugbw_hz when vdb(vod)=0
.meas ac phase_ugbw_rad find vp(vod) when vdb(vod)=0
.meas ac phase_margin_deg param='180+phase_ugbw_rad*57.29577951308232'
.end
