* Sixty-four-channel amplifier array, the scale test of examples/blocks: the channel and
* the bias of multi_channel_amp, 64 copies sharing the bias and the supplies.
* - channel: a five-transistor OTA (NMOS pair, PMOS mirror load, NMOS tail mirrored
*   from the shared nbias, behind an enable switch) and an NMOS source-follower output
*   buffer with its own mirrored current sink; disabled (en low), the output is pulled
*   to vss; 11 devices, 704 in all.
* - shared_bias: the array's reference, a beta-multiplier (with startup) whose NMOS
*   diode sets nbias for all 128 tail and sink mirrors, with a decoupling capacitor.
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

.subckt amp_array_64 en inp0 inn0 out0 inp1 inn1 out1 inp2 inn2 out2 inp3 inn3 out3 inp4
+ inn4 out4 inp5 inn5 out5 inp6 inn6 out6 inp7 inn7 out7 inp8 inn8 out8 inp9 inn9 out9
+ inp10 inn10 out10 inp11 inn11 out11 inp12 inn12 out12 inp13 inn13 out13 inp14 inn14
+ out14 inp15 inn15 out15 inp16 inn16 out16 inp17 inn17 out17 inp18 inn18 out18 inp19
+ inn19 out19 inp20 inn20 out20 inp21 inn21 out21 inp22 inn22 out22 inp23 inn23 out23
+ inp24 inn24 out24 inp25 inn25 out25 inp26 inn26 out26 inp27 inn27 out27 inp28 inn28
+ out28 inp29 inn29 out29 inp30 inn30 out30 inp31 inn31 out31 inp32 inn32 out32 inp33
+ inn33 out33 inp34 inn34 out34 inp35 inn35 out35 inp36 inn36 out36 inp37 inn37 out37
+ inp38 inn38 out38 inp39 inn39 out39 inp40 inn40 out40 inp41 inn41 out41 inp42 inn42
+ out42 inp43 inn43 out43 inp44 inn44 out44 inp45 inn45 out45 inp46 inn46 out46 inp47
+ inn47 out47 inp48 inn48 out48 inp49 inn49 out49 inp50 inn50 out50 inp51 inn51 out51
+ inp52 inn52 out52 inp53 inn53 out53 inp54 inn54 out54 inp55 inn55 out55 inp56 inn56
+ out56 inp57 inn57 out57 inp58 inn58 out58 inp59 inn59 out59 inp60 inn60 out60 inp61
+ inn61 out61 inp62 inn62 out62 inp63 inn63 out63
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
XCH16 inp16 inn16 out16 nbias en channel
XCH17 inp17 inn17 out17 nbias en channel
XCH18 inp18 inn18 out18 nbias en channel
XCH19 inp19 inn19 out19 nbias en channel
XCH20 inp20 inn20 out20 nbias en channel
XCH21 inp21 inn21 out21 nbias en channel
XCH22 inp22 inn22 out22 nbias en channel
XCH23 inp23 inn23 out23 nbias en channel
XCH24 inp24 inn24 out24 nbias en channel
XCH25 inp25 inn25 out25 nbias en channel
XCH26 inp26 inn26 out26 nbias en channel
XCH27 inp27 inn27 out27 nbias en channel
XCH28 inp28 inn28 out28 nbias en channel
XCH29 inp29 inn29 out29 nbias en channel
XCH30 inp30 inn30 out30 nbias en channel
XCH31 inp31 inn31 out31 nbias en channel
XCH32 inp32 inn32 out32 nbias en channel
XCH33 inp33 inn33 out33 nbias en channel
XCH34 inp34 inn34 out34 nbias en channel
XCH35 inp35 inn35 out35 nbias en channel
XCH36 inp36 inn36 out36 nbias en channel
XCH37 inp37 inn37 out37 nbias en channel
XCH38 inp38 inn38 out38 nbias en channel
XCH39 inp39 inn39 out39 nbias en channel
XCH40 inp40 inn40 out40 nbias en channel
XCH41 inp41 inn41 out41 nbias en channel
XCH42 inp42 inn42 out42 nbias en channel
XCH43 inp43 inn43 out43 nbias en channel
XCH44 inp44 inn44 out44 nbias en channel
XCH45 inp45 inn45 out45 nbias en channel
XCH46 inp46 inn46 out46 nbias en channel
XCH47 inp47 inn47 out47 nbias en channel
XCH48 inp48 inn48 out48 nbias en channel
XCH49 inp49 inn49 out49 nbias en channel
XCH50 inp50 inn50 out50 nbias en channel
XCH51 inp51 inn51 out51 nbias en channel
XCH52 inp52 inn52 out52 nbias en channel
XCH53 inp53 inn53 out53 nbias en channel
XCH54 inp54 inn54 out54 nbias en channel
XCH55 inp55 inn55 out55 nbias en channel
XCH56 inp56 inn56 out56 nbias en channel
XCH57 inp57 inn57 out57 nbias en channel
XCH58 inp58 inn58 out58 nbias en channel
XCH59 inp59 inn59 out59 nbias en channel
XCH60 inp60 inn60 out60 nbias en channel
XCH61 inp61 inn61 out61 nbias en channel
XCH62 inp62 inn62 out62 nbias en channel
XCH63 inp63 inn63 out63 nbias en channel
.ends amp_array_64
.end
