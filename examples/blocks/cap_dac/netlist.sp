* 8-bit binary-weighted capacitor DAC of a SAR ADC with its switches, SKY130 1.8 V devices.
* - cu: the unit capacitor, 2 fF as metal-1/metal-2 plates (by value).
* - cbit1 ... cbit128: each bit's capacitor, built from two copies of the bit below,
*   so bit k is 2^k unit capacitors (instance counts, never a scaled plate): 255 units
*   plus one dummy unit = 256 on the common top plate.
* - bit_driver: the bottom-plate switch of one bit, two inverters: the first buffers the
*   bit, the second drives the bottom plate to vrefp (PMOS) or vss (NMOS); its widths grow
*   with the bit's capacitance (one cell per width, parameters wn/wp).
* - sample_switch: a transmission gate sampling vin onto the top plate while sample is
*   high, with its own inverter for the complementary gate.
* PMOS bulks on vdd (one n-well net; the driver's output stage has its source on vrefp,
*   vrefp <= vdd), NMOS bulks on vss.
.global vdd vss

.subckt cu top bot
C1 top bot 2f
.ends cu

.subckt cbit1 top bot
X1 top bot cu
.ends cbit1

.subckt cbit2 top bot
XA top bot cbit1
XB top bot cbit1
.ends cbit2

.subckt cbit4 top bot
XA top bot cbit2
XB top bot cbit2
.ends cbit4

.subckt cbit8 top bot
XA top bot cbit4
XB top bot cbit4
.ends cbit8

.subckt cbit16 top bot
XA top bot cbit8
XB top bot cbit8
.ends cbit16

.subckt cbit32 top bot
XA top bot cbit16
XB top bot cbit16
.ends cbit32

.subckt cbit64 top bot
XA top bot cbit32
XB top bot cbit32
.ends cbit64

.subckt cbit128 top bot
XA top bot cbit64
XB top bot cbit64
.ends cbit128

* bottom-plate driver: d high puts vrefp on the bit's bottom plate
.subckt bit_driver d bot vrefp wn=0.5u wp=1u
MI1 db  d  vdd   vdd sky130_fd_pr__pfet_01v8 w=1u l=0.15u
MI2 db  d  vss   vss sky130_fd_pr__nfet_01v8 w=0.5u l=0.15u
MO1 bot db vrefp vdd sky130_fd_pr__pfet_01v8 w=wp l=0.15u
MO2 bot db vss   vss sky130_fd_pr__nfet_01v8 w=wn l=0.15u
.ends bit_driver

* top-plate sampling switch
.subckt sample_switch vin top sample
MS1 sb  sample vdd vdd sky130_fd_pr__pfet_01v8 w=1u l=0.15u
MS2 sb  sample vss vss sky130_fd_pr__nfet_01v8 w=0.5u l=0.15u
MTN vin sample top vss sky130_fd_pr__nfet_01v8 w=4u l=0.15u nf=2
MTP vin sb     top vdd sky130_fd_pr__pfet_01v8 w=8u l=0.15u nf=4
.ends sample_switch

.subckt cap_dac top vin sample vrefp d0 d1 d2 d3 d4 d5 d6 d7
XS vin top sample sample_switch
* the dummy unit: its bottom plate stays on vss
XDUM top vss cu
XC0 top b0 cbit1
XC1 top b1 cbit2
XC2 top b2 cbit4
XC3 top b3 cbit8
XC4 top b4 cbit16
XC5 top b5 cbit32
XC6 top b6 cbit64
XC7 top b7 cbit128
XD0 d0 b0 vrefp bit_driver wn=0.5u wp=1u
XD1 d1 b1 vrefp bit_driver wn=0.5u wp=1u
XD2 d2 b2 vrefp bit_driver wn=0.5u wp=1u
XD3 d3 b3 vrefp bit_driver wn=0.5u wp=1u
XD4 d4 b4 vrefp bit_driver wn=1u wp=2u
XD5 d5 b5 vrefp bit_driver wn=1u wp=2u
XD6 d6 b6 vrefp bit_driver wn=2u wp=4u
XD7 d7 b7 vrefp bit_driver wn=4u wp=8u
.ends cap_dac
.end
