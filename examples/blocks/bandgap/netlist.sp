* MOS-only bandgap-style voltage reference, SKY130 1.8 V devices (no bipolars: our
* generators draw no PNP). The "diodes" are diode-connected NMOS in weak inversion:
* - bgr_core: two branches carry equal currents set by a cascoded PMOS mirror; MDA (1x)
*   and MDB (8 in parallel, m=8) run at the same current, so the difference of their
*   gate-source voltages, a PTAT voltage, drops across R1. A third mirrored branch pushes
*   that current through R2 into a diode MDC: vref = VGS(MDC) + (R2/R1)*dVGS, the CTAT
*   gate-source voltage plus a scaled PTAT term.
* - res_unit: one 4 kOhm poly resistor (by value); R1 = 2 units, R2 = 10 units in series,
*   so the ratio is set by matched units; two more units in R2, each bypassed by an
*   NMOS switch, trim vref (tr1, tr2).
* - err_amp: a PMOS-input two-stage amplifier forcing the two core nodes equal, its
*   output driving the mirror's gates (with a Miller capacitor).
* - startup: injects current into the core until it leaves the zero-current state,
*   then turns itself off.
* Every PMOS bulk on vdd, every NMOS bulk on vss.
.param lm=2u ld=1u
.global vdd vss

.subckt res_unit a b
R1 a b 4k
.ends res_unit

* error amplifier: PMOS input pair, NMOS mirror load, NMOS common-source second stage
.subckt err_amp inp inn out pb
MT  tail pb   vdd  vdd sky130_fd_pr__pfet_01v8 w=4u l=lm nf=2
M1  d1   inp  tail vdd sky130_fd_pr__pfet_01v8 w=8u l=ld nf=4
M2  d2   inn  tail vdd sky130_fd_pr__pfet_01v8 w=8u l=ld nf=4
M3  d1   d1   vss  vss sky130_fd_pr__nfet_01v8 w=2u l=lm nf=2
M4  d2   d1   vss  vss sky130_fd_pr__nfet_01v8 w=2u l=lm nf=2
M5  out  d2   vss  vss sky130_fd_pr__nfet_01v8 w=4u l=ld nf=2
M6  out  pb   vdd  vdd sky130_fd_pr__pfet_01v8 w=4u l=lm nf=2
CC  d2 out 150f
.ends err_amp

.subckt bgr_core pg pc va vb vref tr1 tr2
* cascoded PMOS mirror: three equal branches
MPA  sa pg vdd vdd sky130_fd_pr__pfet_01v8 w=8u l=lm nf=4
MPB  sb pg vdd vdd sky130_fd_pr__pfet_01v8 w=8u l=lm nf=4
MPC  sc pg vdd vdd sky130_fd_pr__pfet_01v8 w=8u l=lm nf=4
MPAC va pc sa  vdd sky130_fd_pr__pfet_01v8 w=8u l=ld nf=4
MPBC vb pc sb  vdd sky130_fd_pr__pfet_01v8 w=8u l=ld nf=4
MPCC vref pc sc vdd sky130_fd_pr__pfet_01v8 w=8u l=ld nf=4
* weak-inversion NMOS diodes, 1 : 8
MDA  va va vss vss sky130_fd_pr__nfet_01v8 w=2u l=ld nf=2
MDB  xb xb vss vss sky130_fd_pr__nfet_01v8 w=2u l=ld nf=2 m=8
MDC  xc xc vss vss sky130_fd_pr__nfet_01v8 w=2u l=ld nf=2
* R1 = 2 units between vb and MDB
XR1A vb  r1m res_unit
XR1B r1m xb  res_unit
* R2 = 10 units between vref and MDC
XR2A vref r2a res_unit
XR2B r2a  r2b res_unit
XR2C r2b  r2c res_unit
XR2D r2c  r2d res_unit
XR2E r2d  r2e res_unit
XR2F r2e  r2f res_unit
XR2G r2f  r2g res_unit
XR2H r2g  r2h res_unit
XR2I r2h  r2i res_unit
XR2J r2i  t1  res_unit
* trim: two more units, each shorted by an NMOS switch while its trim bit is high
XT1  t1   t2  res_unit
XT2  t2   xc  res_unit
MT1  t1 tr1 t2 vss sky130_fd_pr__nfet_01v8 w=4u l=0.15u nf=2
MT2  t2 tr2 xc vss sky130_fd_pr__nfet_01v8 w=4u l=0.15u nf=2
.ends bgr_core

* the cascode gate and the amplifier's tail bias, mirrored from the core
.subckt core_bias pg pc pb
MB1 nb  pg  vdd vdd sky130_fd_pr__pfet_01v8 w=8u l=lm nf=4
MB2 nb  nb  vss vss sky130_fd_pr__nfet_01v8 w=2u l=lm nf=2
MB3 pc  nb  vss vss sky130_fd_pr__nfet_01v8 w=2u l=lm nf=2
MB4 pc  pc  vdd vdd sky130_fd_pr__pfet_01v8 w=1u l=lm
MB5 pb  nb  vss vss sky130_fd_pr__nfet_01v8 w=2u l=lm nf=2
MB6 pb  pb  vdd vdd sky130_fd_pr__pfet_01v8 w=4u l=lm nf=2
.ends core_bias

* startup: while vref and va are low, MS3 pulls the mirror gate down; once the core
* conducts, MS1 and MS4 pull sx low and MS3 turns off
.subckt startup pg vref va
MS1 sx vref vss vss sky130_fd_pr__nfet_01v8 w=2u l=ld nf=2
MS2 sx sx   vdd vdd sky130_fd_pr__pfet_01v8 w=0.42u l=8u
MS3 pg sx   vss vss sky130_fd_pr__nfet_01v8 w=0.5u l=ld
MS4 sx va   vss vss sky130_fd_pr__nfet_01v8 w=2u l=ld nf=2
.ends startup

.subckt bandgap vref tr1 tr2
XC pg pc va vb vref tr1 tr2 bgr_core
XE va vb pg pb err_amp
XB pg pc pb core_bias
XS pg vref va startup
* reference filter capacitor
CF vref vss 200f
.ends bandgap
.end
