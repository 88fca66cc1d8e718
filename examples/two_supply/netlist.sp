* Two supplies and a PMOS with its bulk tied to its source: a five-transistor OTA on
* vdd1 drives a PMOS source follower on vdd2 whose bulk sits on its own source (no body
* effect). Three PMOS bulk nets (vdd1, vdd2, buf), so three n-wells kept apart by the
* n-well spacing rule; every NMOS on the substrate net vss. SKY130 model names, mapped
* to nmos/pmos by the "models" table of drc_rules.json.
.global vdd1 vdd2 vss

.subckt two_supply inp inn out buf vbias vbp
* OTA on vdd1: input pair, mirror load, tail
M1 n1   inp   tail vss  sky130_fd_pr__nfet_01v8 w=2u l=0.5u nf=2
M2 out  inn   tail vss  sky130_fd_pr__nfet_01v8 w=2u l=0.5u nf=2
M3 n1   n1    vdd1 vdd1 sky130_fd_pr__pfet_01v8 w=2u l=0.5u nf=2
M4 out  n1    vdd1 vdd1 sky130_fd_pr__pfet_01v8 w=2u l=0.5u nf=2
M5 tail vbias vss  vss  sky130_fd_pr__nfet_01v8 w=2u l=1u nf=2
* source follower on vdd2: bias source and follower, its bulk on its source
M6 buf  vbp   vdd2 vdd2 sky130_fd_pr__pfet_01v8 w=2u l=0.5u nf=2
M7 vss  out   buf  buf  sky130_fd_pr__pfet_01v8 w=2u l=0.5u nf=2
.ends two_supply
.end
