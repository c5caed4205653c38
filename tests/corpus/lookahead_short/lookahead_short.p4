/*
 * lookahead_short.p4 -- lookahead past the end of the packet.
 *
 * What it does
 *   EtherType 0x88B7: the parser peeks at the next 64 bits with
 *   lookahead<bit<64>>() and extracts an 8-byte `probe` header when the first
 *   byte is 0xAA. EtherType 0x88B8: it peeks with lookahead<probe_t>() (a
 *   header type) and then extracts. A frame too short for the lookahead makes
 *   bmv2 raise PacketTooShort at the lookahead itself.
 *   Ingress drops (mark_to_drop) frames with a parser error of EtherType
 *   0x88B7; frames of 0x88B8 get a `report` header (the error as a number,
 *   whether probe is valid, the peeked high word) and go to port 3; frames
 *   without error go to port 1.
 *
 * P4 / v1model features exercised
 *   - lookahead<bit<64>>() and lookahead<header>() at and past the end
 *   - parser_error == error.PacketTooShort in ingress, mark_to_drop on error
 *   - the headers extracted before the error are emitted again
 */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header probe_t {
    bit<8>  kind;
    bit<24> id;
    bit<32> data;
}

header report_t {
    bit<8>  err;
    bit<8>  probe_valid;
    bit<32> peek_hi;
}

struct headers_t {
    ethernet_t ethernet;
    probe_t    probe;
    report_t   report;
}

struct metadata_t {
    bit<32> peek_hi;
}

parser ParserImpl(packet_in pkt,
                  out headers_t hdr,
                  inout metadata_t meta,
                  inout standard_metadata_t std_meta) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            0x88B7: peek_bits;
            0x88B8: peek_header;
            default: accept;
        }
    }
    state peek_bits {
        bit<64> peek = pkt.lookahead<bit<64>>();
        meta.peek_hi = peek[63:32];
        transition select(peek[63:56]) {
            0xAA: parse_probe;
            default: accept;
        }
    }
    state peek_header {
        probe_t p = pkt.lookahead<probe_t>();
        meta.peek_hi = p.kind ++ p.id;
        transition select(p.kind) {
            0xAA: parse_probe;
            default: accept;
        }
    }
    state parse_probe {
        pkt.extract(hdr.probe);
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
        if (hdr.ethernet.ether_type == 0x88B8) {
            hdr.report.setValid();
            if (std_meta.parser_error == error.PacketTooShort) {
                hdr.report.err = 1;
            } else if (std_meta.parser_error != error.NoError) {
                hdr.report.err = 0xFF;
            }
            hdr.report.probe_valid = hdr.probe.isValid() ? 8w1 : 8w0;
            hdr.report.peek_hi = meta.peek_hi;
            std_meta.egress_spec = 3;
        } else if (std_meta.parser_error != error.NoError) {
            mark_to_drop(std_meta);
        } else {
            std_meta.egress_spec = 1;
        }
    }
}

control EgressImpl(inout headers_t hdr,
                   inout metadata_t meta,
                   inout standard_metadata_t std_meta) {
    apply { }
}

control ComputeChecksumImpl(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.report);
        pkt.emit(hdr.probe);
    }
}

V1Switch(ParserImpl(), VerifyChecksumImpl(), IngressImpl(), EgressImpl(),
         ComputeChecksumImpl(), DeparserImpl()) main;
