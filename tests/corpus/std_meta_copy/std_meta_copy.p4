/*
 * std_meta_copy.p4 -- mark_to_drop on a copy of the standard metadata.
 *
 * What it does
 *   The byte after the Ethernet header (`op`) selects how the frame is
 *   handled; every way goes through a parameter `inout standard_metadata_t`,
 *   which p4c copies in and out (the callee works on a copy; the copy is
 *   written back when it returns):
 *     1  action drop_via(inout standard_metadata_t m) { mark_to_drop(m); }
 *     2  function drop_fn(inout standard_metadata_t m) calling mark_to_drop(m)
 *     3  control DropCtl(inout standard_metadata_t m) applied from ingress
 *     4  function fwd_fn(inout standard_metadata_t m, port) setting egress_spec
 *     5  the table `ops` (key op) whose action calls drop_fn(std_meta)
 *     6  drop_fn, then fwd_fn(port 2): the later write wins, sent to port 2
 *     7  mark_to_drop through the copy in egress (dropped in egress)
 *     8  mcast_grp = 1 then drop_fn: mark_to_drop clears mcast_grp too
 *   Any other op: port 1.
 *
 * P4 / v1model features exercised
 *   - copy-in/copy-out of standard_metadata_t through action, function and
 *     control parameters; mark_to_drop(m) on the copy
 *   - mark_to_drop in egress through a copy
 */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header op_t {
    bit<8> op;
}

struct headers_t {
    ethernet_t ethernet;
    op_t       op;
}

struct metadata_t { }

void drop_fn(inout standard_metadata_t m) {
    mark_to_drop(m);
}

void fwd_fn(inout standard_metadata_t m, bit<9> port) {
    m.egress_spec = port;
}

control DropCtl(inout standard_metadata_t m) {
    apply {
        mark_to_drop(m);
    }
}

parser ParserImpl(packet_in pkt,
                  out headers_t hdr,
                  inout metadata_t meta,
                  inout standard_metadata_t std_meta) {
    state start {
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.op);
        transition accept;
    }
}

control VerifyChecksumImpl(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control IngressImpl(inout headers_t hdr,
                    inout metadata_t meta,
                    inout standard_metadata_t std_meta) {
    DropCtl() drop_ctl;

    action drop_via(inout standard_metadata_t m) {
        mark_to_drop(m);
    }

    action drop_by_table() {
        drop_fn(std_meta);
    }

    action pass() { }

    table ops {
        key = { hdr.op.op : exact; }
        actions = { drop_by_table; pass; }
        const entries = {
            5 : drop_by_table();
        }
        default_action = pass();
    }

    apply {
        std_meta.egress_spec = 1;
        if (hdr.op.op == 1) {
            drop_via(std_meta);
        } else if (hdr.op.op == 2) {
            drop_fn(std_meta);
        } else if (hdr.op.op == 3) {
            drop_ctl.apply(std_meta);
        } else if (hdr.op.op == 4) {
            fwd_fn(std_meta, 3);
        } else if (hdr.op.op == 6) {
            drop_fn(std_meta);
            fwd_fn(std_meta, 2);
        } else if (hdr.op.op == 8) {
            std_meta.mcast_grp = 1;
            drop_fn(std_meta);
        }
        ops.apply();
    }
}

control EgressImpl(inout headers_t hdr,
                   inout metadata_t meta,
                   inout standard_metadata_t std_meta) {
    apply {
        if (hdr.op.op == 7) {
            drop_fn(std_meta);
        }
    }
}

control ComputeChecksumImpl(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.op);
    }
}

V1Switch(ParserImpl(), VerifyChecksumImpl(), IngressImpl(), EgressImpl(),
         ComputeChecksumImpl(), DeparserImpl()) main;
