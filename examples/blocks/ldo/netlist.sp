* Low-dropout regulator (LDO), SKY130 1.8 V devices: vdd (the unregulated input, 1.8 V)
* -> vout (1.2 V). The input is named vdd, not vin: Centroid infers a power net from its
* name (vdd*, vcc*, ...), and dummies tied to a net it takes for a signal are refused.
* - ldo_bias: a beta-multiplier current reference (with startup) and the mirrors that
*   feed the amplifier, the buffer and the output bleeder.
* - err_amp: a five-transistor stage with a cascoded tail compares the
*   reference vref with the divided output fb; its output drives the pass gate through
*   gate_buffer, an NMOS source follower that lowers the pass gate's drive impedance.
*   Its PMOS mirror load is cascoded (pcas from the bias).
* - the pass device: one large PMOS, w = 800 um in total (20 um x 40 in parallel, m=40,
*   of 8 fingers each), bulk on vdd.
* - fb_divider: 12 matched 5 kOhm poly units: 4 between vout and fb, 8 between fb and
*   vss, so vout = 1.5 * vref with vref = 0.8 V.
* - current_limit: a 1/40 replica of the pass device senses the load current; past
*   the limit, a mirror lifts the pass gate towards vdd.
* - power_good: a comparator (five transistors and an inverter) flags pg high once the
*   divider's tap above fb (9/12 of vout) exceeds vref, i.e. vout within 11 % of its value.
* - enable: en low clamps the bias and turns the pass device off (gate to vdd).
* Miller compensation from vout to the amplifier output (Cc by value). Every PMOS bulk
* on vdd (one n-well net), every NMOS bulk on vss.
.param lm=1u la=0.5u
.global vdd vss

.subckt res_unit a b
R1 a b 5k
.ends res_unit

.subckt ldo_bias nb pb ncas pcas en
* beta multiplier, ~5 uA
MP1 nb  pb  vdd vdd sky130_fd_pr__pfet_01v8 w=2u l=lm nf=2
MP2 pb  pb  vdd vdd sky130_fd_pr__pfet_01v8 w=2u l=lm nf=2
MN1 nb  nb  vss vss sky130_fd_pr__nfet_01v8 w=1u l=lm
MN2 pb  nb  nsr vss sky130_fd_pr__nfet_01v8 w=4u l=lm nf=4
RS  nsr vss 10k
* startup
MS1 sx  nb  vss vss sky130_fd_pr__nfet_01v8 w=1u l=lm
MS2 sx  sx  vdd vdd sky130_fd_pr__pfet_01v8 w=0.42u l=4u
MS3 pb  sx  vss vss sky130_fd_pr__nfet_01v8 w=0.5u l=lm
* cascode bias of the NMOS tail
MP3 ncas pb vdd vdd sky130_fd_pr__pfet_01v8 w=2u l=lm nf=2
MN3 ncas ncas vss vss sky130_fd_pr__nfet_01v8 w=0.5u l=lm
* cascode bias of the PMOS load
MN4 pcas nb  vss vss sky130_fd_pr__nfet_01v8 w=1u l=lm
MP4 pcas pcas vdd vdd sky130_fd_pr__pfet_01v8 w=0.5u l=lm
* disable: en low pulls nb to vss and pb to vdd
MI1 enb en  vdd vdd sky130_fd_pr__pfet_01v8 w=1u l=0.15u
MI2 enb en  vss vss sky130_fd_pr__nfet_01v8 w=0.5u l=0.15u
MD1 nb  enb vss vss sky130_fd_pr__nfet_01v8 w=1u l=0.15u
MD2 pb  en  vdd vdd sky130_fd_pr__pfet_01v8 w=1u l=0.15u
.ends ldo_bias

* the error amplifier: NMOS pair, cascoded PMOS mirror load, cascoded NMOS tail (10 uA)
.subckt err_amp inp inn out nb ncas pcas
M1  d1  inp tail vss sky130_fd_pr__nfet_01v8 w=8u l=la nf=4
M2  out inn tail vss sky130_fd_pr__nfet_01v8 w=8u l=la nf=4
M3  s3  d1  vdd  vdd sky130_fd_pr__pfet_01v8 w=4u l=lm nf=2
M4  s4  d1  vdd  vdd sky130_fd_pr__pfet_01v8 w=4u l=lm nf=2
M3C d1  pcas s3  vdd sky130_fd_pr__pfet_01v8 w=4u l=la nf=2
M4C out pcas s4  vdd sky130_fd_pr__pfet_01v8 w=4u l=la nf=2
MT  tc  nb  vss  vss sky130_fd_pr__nfet_01v8 w=2u l=lm nf=2
MTC tail ncas tc vss sky130_fd_pr__nfet_01v8 w=2u l=lm nf=2
.ends err_amp

* gate buffer: NMOS source follower biased by a mirrored sink, driving the pass gate
.subckt gate_buffer in gate nb
MF1 vdd in  gate vss sky130_fd_pr__nfet_01v8 w=8u l=la nf=4
MF2 gate nb vss  vss sky130_fd_pr__nfet_01v8 w=8u l=lm nf=4
MF3 gate nb vss  vss sky130_fd_pr__nfet_01v8 w=8u l=lm nf=4
.ends gate_buffer

* 4 units vout-fb, 8 units fb-vss
.subckt fb_divider vout fb pg_tap
XU1 vout u1 res_unit
XU2 u1   u2 res_unit
XU3 u2   pg_tap res_unit
XU4 pg_tap fb res_unit
XL1 fb   l1 res_unit
XL2 l1   l2 res_unit
XL3 l2   l3 res_unit
XL4 l3   l4 res_unit
XL5 l4   l5 res_unit
XL6 l5   l6 res_unit
XL7 l6   l7 res_unit
XL8 l7   vss res_unit
.ends fb_divider

* current limit: the sense PMOS copies 1/40 of the load current
.subckt current_limit gate nb pb
MSNS sns  gate vdd vdd sky130_fd_pr__pfet_01v8 w=20u l=0.15u nf=8
MCL1 sns  sns  vss vss sky130_fd_pr__nfet_01v8 w=2u l=lm nf=2
MCL2 lim  sns  vss vss sky130_fd_pr__nfet_01v8 w=2u l=lm nf=2
MCL3 lim  pb   vdd vdd sky130_fd_pr__pfet_01v8 w=8u l=lm nf=4
MCL4 gate lim  vdd vdd sky130_fd_pr__pfet_01v8 w=2u l=la nf=2
.ends current_limit

* power good: pg high while tap > vref
.subckt power_good tap vref pg nb
MC1 c1  vref ct  vss sky130_fd_pr__nfet_01v8 w=4u l=la nf=2
MC2 c2  tap  ct  vss sky130_fd_pr__nfet_01v8 w=4u l=la nf=2
MC3 c1  c1   vdd vdd sky130_fd_pr__pfet_01v8 w=2u l=lm nf=2
MC4 c2  c1   vdd vdd sky130_fd_pr__pfet_01v8 w=2u l=lm nf=2
MC5 ct  nb   vss vss sky130_fd_pr__nfet_01v8 w=1u l=lm
MC6 pg  c2   vdd vdd sky130_fd_pr__pfet_01v8 w=1u l=0.15u
MC7 pg  c2   vss vss sky130_fd_pr__nfet_01v8 w=0.5u l=0.15u
.ends power_good

.subckt ldo vref vout en pg
XB nb pb ncas pcas en ldo_bias
XA fb vref ea nb ncas pcas err_amp
XG ea gate nb gate_buffer
MPASS vout gate vdd vdd sky130_fd_pr__pfet_01v8 w=20u l=0.15u nf=8 m=40
XD vout fb tap fb_divider
XL gate nb pb current_limit
XP tap vref pg nb power_good
* disabled: pass gate to vdd
MOFF gate en vdd vdd sky130_fd_pr__pfet_01v8 w=2u l=0.15u
* bleeder: a minimum load on vout keeps the loop stable with no load
MBL vout nb vss vss sky130_fd_pr__nfet_01v8 w=4u l=lm nf=2
* compensation
CC  vout ea 300f
.ends ldo
.end
