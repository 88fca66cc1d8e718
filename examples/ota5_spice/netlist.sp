* Five-transistor OTA in SPICE: examples/ota5 with SKY130 model names, mapped to
* nmos/pmos by the "models" table of drc_rules.json (SKY130 rules, schema 1.3.0).
* Sizes follow BSIM: w is the total width of one device over its nf fingers.
.param wn=4u lin=0.5u ltail='2*lin'
.global vdd vss

.subckt ota5 inp inn out vbias
* input pair
M1 n1   inp   tail vss sky130_fd_pr__nfet_01v8 w=wn l=lin nf=2
M2 out  inn   tail vss sky130_fd_pr__nfet_01v8 w=wn l=lin nf=2
* current-mirror load
M3 n1   n1    vdd  vdd sky130_fd_pr__pfet_01v8 w=4u l=500n nf=2
M4 out  n1    vdd  vdd sky130_fd_pr__pfet_01v8 w=4u l=500n
+ nf=2                                  $ the mirror's output
* tail current source
M5 tail vbias vss  vss sky130_fd_pr__nfet_01v8 w={wn} l=ltail nf=2
.ends ota5
.end
