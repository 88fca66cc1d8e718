* Two-stage Miller OTA with its bias network, SKY130 1.8 V devices.
* - bias_ref: a self-biased constant-gm (beta-multiplier) current reference, 1:4
*   NMOS pair with a source resistor, its startup leg, and the wide-swing cascode
*   bias voltages (pcas, ncas) derived from it.
* - miller_ota: NMOS input pair with a cascoded NMOS tail, a cascoded PMOS mirror
*   load, a PMOS common-source second stage with a cascoded NMOS current sink, and
*   Miller compensation: Cc in series with a nulling resistor Rz (both by value).
* - power_down: with en low, the bias gates are clamped off and the second stage's
*   gate is pulled to vdd, so the whole block draws no current.
* Every PMOS bulk on vdd (one n-well net), every NMOS bulk on vss (the substrate).
* Model names are mapped to nmos/pmos by the "models" table of drc_rules.json.
.param lb=1u la=0.5u
.global vdd vss

* beta-multiplier reference: ~10 uA per branch
.subckt bias_ref pbias nbias pcas ncas
MP1 nbias pbias vdd vdd sky130_fd_pr__pfet_01v8 w=4u l=lb nf=2
MP2 pbias pbias vdd vdd sky130_fd_pr__pfet_01v8 w=4u l=lb nf=2
MN1 nbias nbias vss vss sky130_fd_pr__nfet_01v8 w=2u l=lb nf=2
MN2 pbias nbias ns  vss sky130_fd_pr__nfet_01v8 w=8u l=lb nf=4
RS  ns vss 6k
* startup: pulls pbias low until the loop conducts
MS1 sx  nbias vss vss sky130_fd_pr__nfet_01v8 w=1u l=lb
MS2 sx  sx    vdd vdd sky130_fd_pr__pfet_01v8 w=0.42u l=4u
MS3 pbias sx  vss vss sky130_fd_pr__nfet_01v8 w=0.5u l=lb
* wide-swing cascode biases: a weak diode in each polarity
MP3 ncas pbias vdd vdd sky130_fd_pr__pfet_01v8 w=4u l=lb nf=2
MN3 ncas ncas  vss vss sky130_fd_pr__nfet_01v8 w=0.5u l=lb
MN4 pcas nbias vss vss sky130_fd_pr__nfet_01v8 w=2u l=lb nf=2
MP4 pcas pcas  vdd vdd sky130_fd_pr__pfet_01v8 w=1u l=lb
.ends bias_ref

* the amplifier: 20 uA tail, 100 uA second stage
.subckt miller_ota inp inn out nbias ncas pcas d2
* input pair
M1  d1 inp tail vss sky130_fd_pr__nfet_01v8 w=8u l=la nf=4
M2  d2 inn tail vss sky130_fd_pr__nfet_01v8 w=8u l=la nf=4
* cascoded tail source
M5  tc  nbias vss vss sky130_fd_pr__nfet_01v8 w=4u l=lb nf=2
M5C tail ncas tc  vss sky130_fd_pr__nfet_01v8 w=4u l=lb nf=2
* cascoded PMOS mirror load (d2 is the first stage's output)
M3  s3 d1   vdd vdd sky130_fd_pr__pfet_01v8 w=4u l=lb nf=2
M4  s4 d1   vdd vdd sky130_fd_pr__pfet_01v8 w=4u l=lb nf=2
M3C d1 pcas s3  vdd sky130_fd_pr__pfet_01v8 w=4u l=la nf=2
M4C d2 pcas s4  vdd sky130_fd_pr__pfet_01v8 w=4u l=la nf=2
* second stage: PMOS common source, cascoded NMOS sink
M6  out d2 vdd vdd sky130_fd_pr__pfet_01v8 w=24u l=la nf=8
M7  s7 nbias vss vss sky130_fd_pr__nfet_01v8 w=20u l=lb nf=8
M7C out ncas s7  vss sky130_fd_pr__nfet_01v8 w=20u l=lb nf=8
* Miller compensation with a nulling resistor
RZ  d2 cz 2k
CC  cz out 400f
.ends miller_ota

* enable: en high runs the block; en low clamps the biases and parks the output stage
.subckt power_down en pbias nbias d2
MI1 enb en vdd vdd sky130_fd_pr__pfet_01v8 w=1u l=0.15u
MI2 enb en vss vss sky130_fd_pr__nfet_01v8 w=0.5u l=0.15u
MC1 nbias enb vss vss sky130_fd_pr__nfet_01v8 w=1u l=0.15u
MC2 pbias en  vdd vdd sky130_fd_pr__pfet_01v8 w=1u l=0.15u
MC3 d2    en  vdd vdd sky130_fd_pr__pfet_01v8 w=1u l=0.15u
.ends power_down

.subckt two_stage_ota inp inn out en
XB pbias nbias pcas ncas bias_ref
XA inp inn out nbias ncas pcas d2 miller_ota
XP en pbias nbias d2 power_down
* bias decoupling on the reference's gates
CB1 nbias vss 100f
CB2 vdd pbias 100f
.ends two_stage_ota
.end
