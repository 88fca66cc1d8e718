* Centroid's open-loop AC testbench of ALIGN's five_transistor_ota on SKY130 (ours):
* 1.8 V supply, inputs at 0.9 V common mode, 0.6 V on the tail's gate, 50 fF load (where the
* layout's wiring weighs: the 1 pF of testbench.sp hides it);
* a DC feedback path (1 GH from the output to the minus input, 1 GF from there to the
* common mode) sets the operating point and opens the loop for AC.
Vsupply vdd 0 1.8
Vground vss 0 0
Vbias vbias 0 0.6
Xdut vbias vss vdd von vin vip five_transistor_ota
Cload von 0 50f
Vcm cm 0 0.9
Vin vip cm dc 0 ac 1
Lfb von vin 1G
Cfb vin cm 1G
.ac dec 20 1 10G
.meas ac gain_db find vdb(von) at=1
.meas ac ugbw_hz when vdb(von)=0
.meas ac phase_ugbw_rad find vp(von) when vdb(von)=0
.meas ac phase_margin_deg param='180+phase_ugbw_rad*57.29577951308232'
.end
