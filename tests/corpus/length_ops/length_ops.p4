/*
 * length_ops.p4 -- standard_metadata.packet_length after setValid/setInvalid,
 * and truncate() called more than once.
 *
 * What it does
 *   The byte after the Ethernet header (`op.code`) selects what ingress and
 *   egress do; a 10-byte `report` header is made valid in ingress and carries
 *   packet_length as ingress saw it at the start (ig_start) and after its
 *   header changes (ig_after), and as egress saw it (eg_len) and after
 *   egress's own changes (eg_after). The frame goes to port 1.
 *     1  ingress: setValid on `extra` (4 bytes)
 *     2  ingress: setInvalid on `tag` (parsed, 2 bytes)
 *     3  ingress: setValid `extra`, setInvalid `tag`
 *     4  ingress: setValid on `tag` when it is already valid
 *     5  egress: setValid `extra`
 *     6  egress: setInvalid `tag`
 *     7  ingress: setValid then setInvalid `extra`
 *     8  ingress: truncate(30) then truncate(20)
 *     9  ingress: truncate(20) then truncate(40)
 *    10  ingress: truncate(40); egress: truncate(24)
 *    11  ingress: truncate(24); egress: truncate(40)
 *    12  egress: truncate(26) then truncate(30)
 *   (`tag` is parsed when the EtherType is 0x88B9.)
 *
 * P4 / v1model features exercised
 *   - packet_length in ingress and egress after header validity changes
 *   - setValid on a valid header, setInvalid then setValid
 *   - several truncate() calls in one or both pipelines
 */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header op_t {
    bit<8> code;
}

header tag_t {
    bit<16> value;
}

header extra_t {
    bit<32> value;
}

header report_t {
    bit<16> ig_start;
    bit<16> ig_after;
    bit<16> eg_len;
    bit<16> eg_after;
    bit<16> marker;
}

struct headers_t {
    ethernet_t ethernet;
    op_t       op;
    report_t   report;
    extra_t    extra;
    tag_t      tag;
}

struct metadata_t { }

parser ParserImpl(packet_in pkt,
                  out headers_t hdr,
                  inout metadata_t meta,
                  inout standard_metadata_t std_meta) {
    state start {
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.op);
        transition select(hdr.ethernet.ether_type) {
            0x88B9: parse_tag;
            default: accept;
        }
    }
    state parse_tag {
        pkt.extract(hdr.tag);
        transition accept;
    }
}

control VerifyChecksumImpl(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control IngressImpl(inout headers_t hdr,
                    inout metadata_t meta,
                    inout standard_metadata_t std_meta) {
    apply {
        bit<16> start_len = (bit<16>)std_meta.packet_length;
        if (hdr.op.code == 1) {
            hdr.extra.setValid();
            hdr.extra.value = 0xE0E1E2E3;
        } else if (hdr.op.code == 2) {
            hdr.tag.setInvalid();
        } else if (hdr.op.code == 3) {
            hdr.extra.setValid();
            hdr.extra.value = 0xE0E1E2E3;
            hdr.tag.setInvalid();
        } else if (hdr.op.code == 4) {
            hdr.tag.setValid();
        } else if (hdr.op.code == 7) {
            hdr.extra.setValid();
            hdr.extra.setInvalid();
        } else if (hdr.op.code == 8) {
            truncate(30);
            truncate(20);
        } else if (hdr.op.code == 9) {
            truncate(20);
            truncate(40);
        } else if (hdr.op.code == 10) {
            truncate(40);
        } else if (hdr.op.code == 11) {
            truncate(24);
        }
        hdr.report.setValid();
        hdr.report.ig_start = start_len;
        hdr.report.ig_after = (bit<16>)std_meta.packet_length;
        hdr.report.marker = 0xABCD;
        std_meta.egress_spec = 1;
    }
}

control EgressImpl(inout headers_t hdr,
                   inout metadata_t meta,
                   inout standard_metadata_t std_meta) {
    apply {
        hdr.report.eg_len = (bit<16>)std_meta.packet_length;
        if (hdr.op.code == 5) {
            hdr.extra.setValid();
            hdr.extra.value = 0xE0E1E2E3;
        } else if (hdr.op.code == 6) {
            hdr.tag.setInvalid();
        } else if (hdr.op.code == 10) {
            truncate(24);
        } else if (hdr.op.code == 11) {
            truncate(40);
        } else if (hdr.op.code == 12) {
            truncate(26);
            truncate(30);
        }
        hdr.report.eg_after = (bit<16>)std_meta.packet_length;
    }
}

control ComputeChecksumImpl(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.op);
        pkt.emit(hdr.report);
        pkt.emit(hdr.extra);
        pkt.emit(hdr.tag);
    }
}

V1Switch(ParserImpl(), VerifyChecksumImpl(), IngressImpl(), EgressImpl(),
         ComputeChecksumImpl(), DeparserImpl()) main;
