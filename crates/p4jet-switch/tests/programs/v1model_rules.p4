/*
 * v1model_rules.p4 -- the program that tests/programs/v1model_rules.json encodes
 * (written by hand in p4c's JSON format 2.23, with p4c's naming: tbl_* keyless tables
 * around each statement group, node_* conditionals, temporaries for digest fields).
 * p4c was not run on this file; it documents the JSON, used by tests/v1model_rules.rs.
 *
 * A frame with EtherType 0x88B5 carries a `ctl` header that tells the pipeline what to
 * do (flag bits below) and an `obs` header into which ingress and egress write the
 * metadata they see, so that every rule shows in the bytes that leave the switch.
 * Field list 3 names standard_metadata.ingress_port, as P4_14 programs compiled by p4c
 * can; the other lists are @field_list annotations on user metadata.
 */
#include <core.p4>
#include <v1model.p4>

const bit<8> FL_CLONE  = 1;   // passes, kept
const bit<8> FL_RECIRC = 2;   // passes
const bit<8> FL_PORT   = 3;   // standard_metadata.ingress_port, passes

// ctl.iflags
const bit<16> I_CLONE = 0x1;          // clone I2E to session i_session (field list 1)
const bit<16> I_RESUBMIT = 0x2;       // resubmit (field list 1) while passes < resubmits
const bit<16> I_MCAST = 0x4;          // mcast_grp = mgid
const bit<16> I_DROP = 0x8;           // mark_to_drop
const bit<16> I_DIGEST_A = 0x10;      // digest 1: { src_addr, ingress_port }
const bit<16> I_DIGEST_B = 0x20;      // digest 2: { mgid }
const bit<16> I_EXIT = 0x40;          // exit (skips I_LATE)
const bit<16> I_LATE = 0x80;          // egress_spec = late_port
const bit<16> I_TRUNC = 0x100;        // truncate(trunc)
const bit<16> I_RESUBMIT_PORT = 0x200; // resubmit (field list 3) while passes < resubmits
const bit<16> I_RECIRC = 0x400;       // recirculate (field list 2) while passes < recircs
const bit<16> I_EXTRA = 0x800;        // extra.setValid(), extra.value = 0x0BADCAFE
// ctl.eflags
const bit<16> E_CLONE = 0x1;          // clone E2E to session e_session (field list 1), first egress pass only
const bit<16> E_RECIRC = 0x2;         // recirculate (field list 2) while passes < recircs
const bit<16> E_DROP = 0x4;           // mark_to_drop
const bit<16> E_MCAST = 0x8;          // mcast_grp = mgid
const bit<16> E_TRUNC = 0x10;         // truncate(etrunc)
const bit<16> E_SPEC = 0x20;          // egress_spec = late_port
const bit<16> E_EXTRA = 0x40;         // add extra (value 0xDEADBEEF), ctl.has_extra = 1

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header ctl_t {
    bit<16> iflags;
    bit<16> eflags;
    bit<16> i_session;
    bit<16> e_session;
    bit<16> mgid;
    bit<16> out_port;
    bit<16> late_port;
    bit<8>  prio;
    bit<8>  resubmits;
    bit<8>  recircs;
    bit<8>  trunc;
    bit<8>  has_extra;
    bit<8>  etrunc;
}

header obs_t {
    // written by every ingress pass
    bit<8>  ig_count;
    bit<8>  ig_instance_type;
    bit<16> ig_ingress_port;
    bit<32> ig_packet_length;
    bit<8>  ig_passes;
    bit<8>  ig_kept;
    bit<8>  ig_lost;
    bit<8>  ig_pad;
    // written by every egress pass
    bit<8>  eg_count;
    bit<8>  eg_instance_type;
    bit<16> eg_ingress_port;
    bit<16> eg_egress_port;
    bit<16> eg_egress_spec;
    bit<16> eg_rid;
    bit<16> eg_mcast_grp;
    bit<32> eg_packet_length;
    bit<8>  eg_passes;
    bit<8>  eg_kept;
    bit<8>  eg_lost;
    bit<8>  eg_priority;
    bit<8>  eg_pad;
}

header extra_t {
    bit<32> value;
}

struct headers_t {
    ethernet_t ethernet;
    ctl_t      ctl;
    obs_t      obs;
    extra_t    extra;
}

struct metadata_t {
    @field_list(FL_CLONE, FL_RECIRC, FL_PORT)
    bit<8> passes;
    @field_list(FL_CLONE)
    bit<8> kept;
    bit<8> lost;
}

struct mac_learn_t {
    bit<48> src_addr;
    bit<9>  ingress_port;
}

struct group_learn_t {
    bit<16> mgid;
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t std_meta) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            0x88B5: parse_ctl;
            default: accept;
        }
    }
    state parse_ctl {
        pkt.extract(hdr.ctl);
        pkt.extract(hdr.obs);
        transition select(hdr.ctl.has_extra) {
            1: parse_extra;
            default: accept;
        }
    }
    state parse_extra {
        pkt.extract(hdr.extra);
        transition accept;
    }
}

control VerifyChecksumImpl(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control IngressImpl(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t std_meta) {
    apply {
        if (hdr.ctl.isValid()) {
            hdr.obs.ig_count = hdr.obs.ig_count + 1;
            hdr.obs.ig_instance_type = (bit<8>)std_meta.instance_type;
            hdr.obs.ig_ingress_port = (bit<16>)std_meta.ingress_port;
            hdr.obs.ig_packet_length = std_meta.packet_length;
            hdr.obs.ig_passes = meta.passes;
            hdr.obs.ig_kept = meta.kept;
            hdr.obs.ig_lost = meta.lost;
            meta.kept = 0xAA;
            meta.lost = 0xBB;
            std_meta.egress_spec = (bit<9>)hdr.ctl.out_port;
            std_meta.priority = (bit<3>)hdr.ctl.prio;
            if ((hdr.ctl.iflags & I_CLONE) != 0) {
                clone_preserving_field_list(CloneType.I2E, (bit<32>)hdr.ctl.i_session, FL_CLONE);
            }
            if ((hdr.ctl.iflags & I_MCAST) != 0) {
                std_meta.mcast_grp = hdr.ctl.mgid;
            }
            if ((hdr.ctl.iflags & I_DIGEST_A) != 0) {
                digest<mac_learn_t>(1, { hdr.ethernet.src_addr, std_meta.ingress_port });
            }
            if ((hdr.ctl.iflags & I_DIGEST_B) != 0) {
                digest<group_learn_t>(1, { hdr.ctl.mgid });
            }
            if ((hdr.ctl.iflags & I_RESUBMIT) != 0 && meta.passes < hdr.ctl.resubmits) {
                meta.passes = meta.passes + 1;
                resubmit_preserving_field_list(FL_CLONE);
            }
            if ((hdr.ctl.iflags & I_RESUBMIT_PORT) != 0 && meta.passes < hdr.ctl.resubmits) {
                meta.passes = meta.passes + 1;
                resubmit_preserving_field_list(FL_PORT);
            }
            if ((hdr.ctl.iflags & I_RECIRC) != 0 && meta.passes < hdr.ctl.recircs) {
                meta.passes = meta.passes + 1;
                recirculate_preserving_field_list(FL_RECIRC);
            }
            if ((hdr.ctl.iflags & I_EXTRA) != 0 && !hdr.extra.isValid()) {
                hdr.extra.setValid();
                hdr.extra.value = 0x0BADCAFE;
            }
            if ((hdr.ctl.iflags & I_DROP) != 0) {
                mark_to_drop(std_meta);
            }
            if ((hdr.ctl.iflags & I_TRUNC) != 0) {
                truncate((bit<32>)hdr.ctl.trunc);
            }
            if ((hdr.ctl.iflags & I_EXIT) != 0) {
                exit;
            }
            if ((hdr.ctl.iflags & I_LATE) != 0) {
                std_meta.egress_spec = (bit<9>)hdr.ctl.late_port;
            }
        } else {
            mark_to_drop(std_meta);
        }
    }
}

control EgressImpl(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t std_meta) {
    apply {
        if (hdr.ctl.isValid()) {
            hdr.obs.eg_count = hdr.obs.eg_count + 1;
            hdr.obs.eg_instance_type = (bit<8>)std_meta.instance_type;
            hdr.obs.eg_ingress_port = (bit<16>)std_meta.ingress_port;
            hdr.obs.eg_egress_port = (bit<16>)std_meta.egress_port;
            hdr.obs.eg_egress_spec = (bit<16>)std_meta.egress_spec;
            hdr.obs.eg_rid = std_meta.egress_rid;
            hdr.obs.eg_mcast_grp = std_meta.mcast_grp;
            hdr.obs.eg_packet_length = std_meta.packet_length;
            hdr.obs.eg_passes = meta.passes;
            hdr.obs.eg_kept = meta.kept;
            hdr.obs.eg_lost = meta.lost;
            hdr.obs.eg_priority = (bit<8>)std_meta.priority;
            if ((hdr.ctl.eflags & E_CLONE) != 0 && hdr.obs.eg_count == 1) {
                clone_preserving_field_list(CloneType.E2E, (bit<32>)hdr.ctl.e_session, FL_CLONE);
            }
            if ((hdr.ctl.eflags & E_RECIRC) != 0 && meta.passes < hdr.ctl.recircs) {
                meta.passes = meta.passes + 1;
                recirculate_preserving_field_list(FL_RECIRC);
            }
            if ((hdr.ctl.eflags & E_DROP) != 0) {
                mark_to_drop(std_meta);
            }
            if ((hdr.ctl.eflags & E_MCAST) != 0) {
                std_meta.mcast_grp = hdr.ctl.mgid;
            }
            if ((hdr.ctl.eflags & E_TRUNC) != 0) {
                truncate((bit<32>)hdr.ctl.etrunc);
            }
            if ((hdr.ctl.eflags & E_SPEC) != 0) {
                std_meta.egress_spec = (bit<9>)hdr.ctl.late_port;
            }
            if ((hdr.ctl.eflags & E_EXTRA) != 0 && !hdr.extra.isValid()) {
                hdr.extra.setValid();
                hdr.extra.value = 0xDEADBEEF;
                hdr.ctl.has_extra = 1;
            }
        }
    }
}

control ComputeChecksumImpl(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ctl);
        pkt.emit(hdr.obs);
        pkt.emit(hdr.extra);
    }
}

V1Switch(ParserImpl(), VerifyChecksumImpl(), IngressImpl(), EgressImpl(),
         ComputeChecksumImpl(), DeparserImpl()) main;
