* A sensor interface on two supplies, SKY130 1.8 V devices: a core amplifier on vdd
* (1.2 V) whose result leaves the chip on the I/O supply vddio (1.8 V), twice:
* - core_amp (vdd): a two-stage amplifier (five-transistor first stage, NMOS-biased PMOS
*   common-source second stage) from the shared nbias; its analog output aout.
* - core_slicer (vdd): two inverters square aout up into the core logic level dcore.
* - level_shifter (vdd -> vddio): an inverter on vdd drives the NMOS pair of a
*   cross-coupled PMOS latch on vddio. Two of them: the data and the output enable.
* - io_driver (vddio): a tapered tristate output driver (two inverters, then a NAND/NOR
*   pre-driver pair and the pad PMOS/NMOS).
* - analog_follower (vddio): a PMOS source follower buffering aout onto aout_io, its bulk
*   tied to its own source (no body effect), biased by a PMOS source on vddio mirrored
*   from nbias.
* PMOS bulks: vdd, vddio and the follower's source aout_io, so three n-wells kept apart;
* every NMOS bulk on vss.
.param la=0.5u lb=1u
.global vdd vddio vss

.subckt core_amp inp inn aout nbias
M1  d1  inp tail vss sky130_fd_pr__nfet_01v8 w=4u l=la nf=2
M2  d2  inn tail vss sky130_fd_pr__nfet_01v8 w=4u l=la nf=2
M3  d1  d1  vdd  vdd sky130_fd_pr__pfet_01v8 w=4u l=lb nf=2
M4  d2  d1  vdd  vdd sky130_fd_pr__pfet_01v8 w=4u l=lb nf=2
M5  tail nbias vss vss sky130_fd_pr__nfet_01v8 w=2u l=lb nf=2
M6  aout d2 vdd  vdd sky130_fd_pr__pfet_01v8 w=8u l=la nf=4
M7  aout nbias vss vss sky130_fd_pr__nfet_01v8 w=4u l=lb nf=2
CC  d2 aout 100f
.ends core_amp

.subckt core_slicer aout dcore
MA1 s1 aout vdd vdd sky130_fd_pr__pfet_01v8 w=1u l=0.15u
MA2 s1 aout vss vss sky130_fd_pr__nfet_01v8 w=0.5u l=0.15u
MA3 dcore s1 vdd vdd sky130_fd_pr__pfet_01v8 w=2u l=0.15u
MA4 dcore s1 vss vss sky130_fd_pr__nfet_01v8 w=1u l=0.15u
.ends core_slicer

* in (vdd domain) -> out (vddio domain), outb its complement
.subckt level_shifter in out outb
MI1 inb in  vdd   vdd   sky130_fd_pr__pfet_01v8 w=1u l=0.15u
MI2 inb in  vss   vss   sky130_fd_pr__nfet_01v8 w=0.5u l=0.15u
MN1 outb in  vss  vss   sky130_fd_pr__nfet_01v8 w=2u l=0.15u
MN2 out  inb vss  vss   sky130_fd_pr__nfet_01v8 w=2u l=0.15u
MP1 outb out vddio vddio sky130_fd_pr__pfet_01v8 w=0.5u l=0.5u
MP2 out  outb vddio vddio sky130_fd_pr__pfet_01v8 w=0.5u l=0.5u
.ends level_shifter

* tristate driver: oe high drives pad with the data, oe low leaves pad floating
.subckt io_driver data oe oeb pad
MB1 db   data vddio vddio sky130_fd_pr__pfet_01v8 w=2u l=0.15u
MB2 db   data vss   vss   sky130_fd_pr__nfet_01v8 w=1u l=0.15u
MB3 dbuf db   vddio vddio sky130_fd_pr__pfet_01v8 w=4u l=0.15u nf=2
MB4 dbuf db   vss   vss   sky130_fd_pr__nfet_01v8 w=2u l=0.15u nf=2
* pgate = NAND(dbuf, oe), ngate = NOR(dbuf, oeb)
MG1 pgate dbuf vddio vddio sky130_fd_pr__pfet_01v8 w=2u l=0.15u
MG2 pgate oe   vddio vddio sky130_fd_pr__pfet_01v8 w=2u l=0.15u
MG3 pgate dbuf gx    vss   sky130_fd_pr__nfet_01v8 w=2u l=0.15u
MG4 gx    oe   vss   vss   sky130_fd_pr__nfet_01v8 w=2u l=0.15u
MG5 gy    dbuf vddio vddio sky130_fd_pr__pfet_01v8 w=4u l=0.15u nf=2
MG6 ngate oeb  gy    vddio sky130_fd_pr__pfet_01v8 w=4u l=0.15u nf=2
MG7 ngate dbuf vss   vss   sky130_fd_pr__nfet_01v8 w=1u l=0.15u
MG8 ngate oeb  vss   vss   sky130_fd_pr__nfet_01v8 w=1u l=0.15u
* the pad transistors
MOP pad pgate vddio vddio sky130_fd_pr__pfet_01v8 w=24u l=0.15u nf=8
MON pad ngate vss   vss   sky130_fd_pr__nfet_01v8 w=12u l=0.15u nf=4
.ends io_driver

.subckt analog_follower aout aout_io nbias
* vddio bias: NMOS mirror from nbias into a PMOS diode, mirrored to the source
MB1 pb  nbias vss   vss   sky130_fd_pr__nfet_01v8 w=2u l=lb nf=2
MB2 pb  pb    vddio vddio sky130_fd_pr__pfet_01v8 w=2u l=lb nf=2
MB3 aout_io pb vddio vddio sky130_fd_pr__pfet_01v8 w=8u l=lb nf=4
* the follower, bulk on its source
MSF vss aout aout_io aout_io sky130_fd_pr__pfet_01v8 w=8u l=la nf=4
.ends analog_follower

* nbias from the reference current ibias (a diode-connected NMOS)
.subckt dual_supply_io inp inn ibias oe pad aout_io
MBD ibias ibias vss vss sky130_fd_pr__nfet_01v8 w=2u l=lb nf=2
XA inp inn aout ibias core_amp
XS aout dcore core_slicer
XLD dcore data datab level_shifter
XLE oe oe_io oeb_io level_shifter
XD data oe_io oeb_io pad io_driver
XF aout aout_io ibias analog_follower
.ends dual_supply_io
.end
