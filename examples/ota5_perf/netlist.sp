* Five-transistor OTA on SKY130 for post-layout performance (issue 27): examples/ota5_spice
* with its rails as ports, so that the testbench drives them.
* Sizes follow BSIM: w is the total width of one device over its nf fingers.
.subckt ota5 vdd vss inp inn out vbias
* input pair
M1 n1   inp   tail vss sky130_fd_pr__nfet_01v8 w=4u l=0.5u nf=2
M2 out  inn   tail vss sky130_fd_pr__nfet_01v8 w=4u l=0.5u nf=2
* current-mirror load
M3 n1   n1    vdd  vdd sky130_fd_pr__pfet_01v8 w=4u l=0.5u nf=2
M4 out  n1    vdd  vdd sky130_fd_pr__pfet_01v8 w=4u l=0.5u nf=2
* tail current source
M5 tail vbias vss  vss sky130_fd_pr__nfet_01v8 w=4u l=1u nf=2
.ends ota5
.end
