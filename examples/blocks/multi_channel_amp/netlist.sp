* Sixteen-channel amplifier array (e.g. a sensor front end), SKY130 1.8 V devices:
* sixteen copies of one channel sharing the bias and the supplies.
* - channel: a five-transistor OTA (NMOS pair, PMOS mirror load, NMOS tail mirrored
*   from the shared nbias, behind an enable switch) and an NMOS source-follower output
*   buffer with its own mirrored current sink; disabled (en low), the output is pulled
*   to vss; 11 devices, 176 in all.
* - shared_bias: the array's reference, a beta-multiplier (with startup) whose NMOS
*   diode sets nbias for all 32 tail and sink mirrors, with a decoupling capacitor.
* Every PMOS bulk on vdd, every NMOS bulk on vss.
.param lin=0.5u lb=1u
.global vdd vss

.subckt channel inp inn out nbias en
M1  d1  inp tail vss sky130_fd_pr__nfet_01v8 w=4u l=lin nf=2
M2  d2  inn tail vss sky130_fd_pr__nfet_01v8 w=4u l=lin nf=2
M3  d1  d1  vdd  vdd sky130_fd_pr__pfet_01v8 w=2u l=lb nf=2
M4  d2  d1  vdd  vdd sky130_fd_pr__pfet_01v8 w=2u l=lb nf=2
ME  tail en ts   vss sky130_fd_pr__nfet_01v8 w=2u l=0.15u nf=2
MT  ts  nbias vss vss sky130_fd_pr__nfet_01v8 w=2u l=lb nf=2
* output buffer
MF  vdd d2  out  vss sky130_fd_pr__nfet_01v8 w=4u l=lin nf=2
MS  out nbias vss vss sky130_fd_pr__nfet_01v8 w=2u l=lb nf=2
* disabled: the output parks at vss through MD (gate on the inverted enable)
MI1 enb en vdd vdd sky130_fd_pr__pfet_01v8 w=1u l=0.15u
MI2 enb en vss vss sky130_fd_pr__nfet_01v8 w=0.5u l=0.15u
MD  out enb vss vss sky130_fd_pr__nfet_01v8 w=0.5u l=0.15u
.ends channel

.subckt shared_bias nbias
MP1 nbias pb vdd vdd sky130_fd_pr__pfet_01v8 w=4u l=lb nf=2
MP2 pb    pb vdd vdd sky130_fd_pr__pfet_01v8 w=4u l=lb nf=2
MN1 nbias nbias vss vss sky130_fd_pr__nfet_01v8 w=2u l=lb nf=2
MN2 pb    nbias ns  vss sky130_fd_pr__nfet_01v8 w=8u l=lb nf=4
RS  ns vss 8k
MS1 sx nbias vss vss sky130_fd_pr__nfet_01v8 w=1u l=lb
MS2 sx sx    vdd vdd sky130_fd_pr__pfet_01v8 w=0.42u l=4u
MS3 pb sx    vss vss sky130_fd_pr__nfet_01v8 w=0.5u l=lb
CD  nbias vss 200f
.ends shared_bias

.subckt multi_channel_amp en inp0 inn0 out0 inp1 inn1 out1 inp2 inn2 out2 inp3 inn3 out3 inp4 inn4 out4 inp5 inn5 out5 inp6 inn6 out6 inp7 inn7 out7 inp8 inn8 out8 inp9 inn9 out9 inp10 inn10 out10 inp11 inn11 out11 inp12 inn12 out12 inp13 inn13 out13 inp14 inn14 out14 inp15 inn15 out15
XB nbias shared_bias
XCH0 inp0 inn0 out0 nbias en channel
XCH1 inp1 inn1 out1 nbias en channel
XCH2 inp2 inn2 out2 nbias en channel
XCH3 inp3 inn3 out3 nbias en channel
XCH4 inp4 inn4 out4 nbias en channel
XCH5 inp5 inn5 out5 nbias en channel
XCH6 inp6 inn6 out6 nbias en channel
XCH7 inp7 inn7 out7 nbias en channel
XCH8 inp8 inn8 out8 nbias en channel
XCH9 inp9 inn9 out9 nbias en channel
XCH10 inp10 inn10 out10 nbias en channel
XCH11 inp11 inn11 out11 nbias en channel
XCH12 inp12 inn12 out12 nbias en channel
XCH13 inp13 inn13 out13 nbias en channel
XCH14 inp14 inn14 out14 nbias en channel
XCH15 inp15 inn15 out15 nbias en channel
.ends multi_channel_amp
.end
