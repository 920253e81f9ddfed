-- SPDX-License-Identifier: BSD-3-Clause
-- Wireshark / tshark dissector for swemu's INA protocol, version 1
-- (docs/PROTOCOL.md): the 24-byte header, every field by name, the
-- payload as elements of the packet's type, and the validation of
-- nic/ina_proto.c (ina_parse) as expert info named by swemu's drop
-- reasons; and the control channel.  Registered on UDP 48863 (control)
-- and 48864-48879 (INA).  Use:
--   tshark -X lua_script:testbed/capture/ina.lua -r tor0.pcapng -Y ina
-- or copy it to ~/.local/lib/wireshark/plugins/.

local ina = Proto("ina", "In-network aggregation (swemu INA v1)")

local types = { [1] = "DATA", [2] = "RESULT", [3] = "ACK", [4] = "PULL", [5] = "NACK", [6] = "CONTROL", [7] = "HAVE", [8] = "MISS" }
local dtypes = { [0] = "none", [1] = "int32", [2] = "fp32", [3] = "bfp32", [4] = "bf16" }

local f = ina.fields
f.version = ProtoField.uint8("ina.version", "Version")
f.type = ProtoField.uint8("ina.type", "Type", base.DEC, types)
f.dtype = ProtoField.uint8("ina.dtype", "Data type", base.DEC, dtypes)
f.flags = ProtoField.uint8("ina.flags", "Flags", base.HEX)
f.retx = ProtoField.bool("ina.flags.retx", "Retransmission", 8, nil, 0x01)
f.overflow = ProtoField.bool("ina.flags.overflow", "int32 sum overflowed", 8, nil, 0x02)
f.join = ProtoField.bool("ina.flags.join", "Join (counts toward fan-in, adds nothing)", 8, nil, 0x04)
f.idle = ProtoField.bool("ina.flags.idle", "Idle report (MISS)", 8, nil, 0x08)
f.ce = ProtoField.bool("ina.flags.ce", "Congestion experienced", 8, nil, 0x10)
f.job = ProtoField.uint16("ina.job", "Job")
f.contributor = ProtoField.uint16("ina.contributor", "Contributor (65535: the ring upstream)")
f.slot = ProtoField.uint32("ina.slot", "Slot", base.HEX)
f.slot_set = ProtoField.uint32("ina.slot.set", "Shadow set", base.DEC, nil, 0x80000000)
f.slot_index = ProtoField.uint32("ina.slot.index", "Slot index", base.DEC, nil, 0x7FFFFFFF)
f.epoch = ProtoField.uint32("ina.epoch", "Epoch")
f.seq = ProtoField.uint32("ina.seq", "Sequence (slice)")
f.count = ProtoField.uint16("ina.count", "Count")
f.exponent = ProtoField.int8("ina.exponent", "Block exponent")
f.reserved = ProtoField.uint8("ina.reserved", "Reserved")
f.payload = ProtoField.bytes("ina.payload", "Payload")
f.int32 = ProtoField.int32("ina.elem.int32", "Element")
f.fp32 = ProtoField.float("ina.elem.fp32", "Element")
f.bf16 = ProtoField.uint16("ina.elem.bf16", "Element (bf16 bits)", base.HEX)
f.control = ProtoField.string("ina.control", "Control message")

local e = ina.experts
local reasons = {
	truncated = "shorter than the 24-byte header",
	bad_version = "version is not 1",
	bad_type = "unknown message type",
	bad_dtype = "unknown data type, or wrong for the message type",
	bad_flags = "undefined flag bit set, or JOIN on a non-DATA message",
	reserved_nonzero = "reserved byte is not zero",
	bad_exponent = "exponent set outside bfp32",
	count_zero = "DATA or RESULT without elements",
	count_too_large = "count above the largest packet's",
	count_exceeds_payload = "count needs more bytes than follow",
	payload_trailing = "bytes after the elements",
}
local experts = {}
for name, text in pairs(reasons) do
	experts[name] = ProtoExpert.new("ina." .. name, name .. ": " .. text, expert.group.MALFORMED, expert.severity.ERROR)
	table.insert(e, experts[name])
end

local MAX_PAYLOAD = 9000 - 20 - 8 - 24
local MAX_ELEMS = math.floor(MAX_PAYLOAD / 4)

local function elem_size(dt) return dt == 4 and 2 or 4 end

-- The payload length a valid header asks for (ina_proto.c, expected_payload).
local function expected(t, flags, dt, count)
	if t == 1 then return bit.band(flags, 0x04) ~= 0 and 0 or count * elem_size(dt) end
	if t == 2 then return count * elem_size(dt) end
	if t == 6 then return count end
	return 0
end

-- The first reason ina_parse would give, in its order, or nil; from the
-- frame's length on the wire (a capture with a short snaplen keeps less).
local function validate(buf)
	local len = buf:reported_len()
	if len < 24 then return "truncated" end
	if buf:len() < 24 then return nil end -- header cut by the snaplen: nothing to check
	local v, t, dt, flags = buf(0, 1):uint(), buf(1, 1):uint(), buf(2, 1):uint(), buf(3, 1):uint()
	local count, exp, res = buf(20, 2):uint(), buf(22, 1):int(), buf(23, 1):uint()
	if v ~= 1 then return "bad_version" end
	if t == 0 or t > 8 then return "bad_type" end
	if (t == 6 and dt ~= 0) or (t ~= 6 and (dt < 1 or dt > 4)) then return "bad_dtype" end
	if bit.band(flags, bit.bnot(0x1f)) ~= 0 or (bit.band(flags, 0x04) ~= 0 and t ~= 1) or
	    (bit.band(flags, 0x08) ~= 0 and t ~= 8) then return "bad_flags" end
	if res ~= 0 then return "reserved_nonzero" end
	if exp ~= 0 and dt ~= 3 then return "bad_exponent" end
	if count == 0 and (t == 1 or t == 2) then return "count_zero" end
	if count > (t == 6 and MAX_PAYLOAD or MAX_ELEMS) then return "count_too_large" end
	local want, have = expected(t, flags, dt, count), len - 24
	if have < want then return "count_exceeds_payload" end
	if have > want then return "payload_trailing" end
	return nil
end

function ina.dissector(buf, pinfo, root)
	-- the host library's reliable transfer (its header starts with "H")
	-- sends from ephemeral ports, which may fall in the INA range: not ours
	if buf:len() >= 1 and buf(0, 1):uint() == 0x48 then return 0 end
	pinfo.cols.protocol = "INA"
	local tree = root:add(ina, buf())
	local why = validate(buf)
	if buf:len() < 24 then
		if not why then return buf:len() end -- cut by the capture's snaplen
		tree:add_proto_expert_info(experts.truncated)
		pinfo.cols.info = "INA malformed: truncated"
		return
	end
	local t, dt, flags = buf(1, 1):uint(), buf(2, 1):uint(), buf(3, 1):uint()
	tree:add(f.version, buf(0, 1))
	tree:add(f.type, buf(1, 1))
	tree:add(f.dtype, buf(2, 1))
	local ft = tree:add(f.flags, buf(3, 1))
	ft:add(f.retx, buf(3, 1))
	ft:add(f.overflow, buf(3, 1))
	ft:add(f.join, buf(3, 1))
	ft:add(f.idle, buf(3, 1))
	ft:add(f.ce, buf(3, 1))
	tree:add(f.job, buf(4, 2))
	tree:add(f.contributor, buf(6, 2))
	local st = tree:add(f.slot, buf(8, 4))
	st:add(f.slot_set, buf(8, 4))
	st:add(f.slot_index, buf(8, 4))
	tree:add(f.epoch, buf(12, 4))
	tree:add(f.seq, buf(16, 4))
	tree:add(f.count, buf(20, 2))
	tree:add(f.exponent, buf(22, 1))
	tree:add(f.reserved, buf(23, 1))
	local count = buf(20, 2):uint()
	pinfo.cols.info = string.format("INA %s job %d contributor %d slot %d%s seq %d count %d%s",
		types[t] or ("type " .. t), buf(4, 2):uint(), buf(6, 2):uint(), bit.band(buf(8, 4):uint(), 0x7FFFFFFF),
		buf(8, 4):uint() >= 0x80000000 and "'" or "", buf(16, 4):uint(), count,
		bit.band(flags, 0x01) ~= 0 and " RETX" or "")
	if why then
		tree:add_proto_expert_info(experts[why])
		pinfo.cols.info = "INA malformed: " .. why
		if buf:len() > 24 then tree:add(f.payload, buf(24)) end
		return
	end
	if buf:len() == 24 then return end
	local pl = tree:add(f.payload, buf(24))
	if t == 6 then
		pl:add(f.control, buf(24))
		return
	end
	local es = elem_size(dt)
	for i = 0, math.floor((buf:len() - 24) / es) - 1 do -- the elements the capture kept
		local r = buf(24 + i * es, es)
		if dt == 2 then pl:add(f.fp32, r)
		elseif dt == 4 then pl:add(f.bf16, r)
		else pl:add(f.int32, r) end
	end
end

-- The control channel (UDP 48863): command text, signed by an AUTH1 line
-- (nic/ctl_auth.h: "AUTH1 <ms> <nonce> <HMAC>"), and the switch's
-- one-line answers.
local ctrl = Proto("ina_ctrl", "swemu control channel")
local cf = ctrl.fields
cf.auth_ts = ProtoField.string("ina_ctrl.auth.time_ms", "Signed at (ms since the epoch)")
cf.auth_nonce = ProtoField.string("ina_ctrl.auth.nonce", "Nonce")
cf.auth_hmac = ProtoField.string("ina_ctrl.auth.hmac", "HMAC-SHA-256")
cf.text = ProtoField.string("ina_ctrl.text", "Text")
cf.op = ProtoField.string("ina_ctrl.op", "Operation")

function ctrl.dissector(buf, pinfo, root)
	pinfo.cols.protocol = "INA-CTRL"
	local tree = root:add(ctrl, buf())
	local s = buf():string()
	local off = 0
	local ts, nonce, hmac = s:match("^AUTH1 (%d+) (%x+) (%x+)\n")
	if ts then
		local line = #("AUTH1 " .. ts .. " " .. nonce .. " " .. hmac .. "\n")
		tree:add(cf.auth_ts, buf(6, #ts), ts)
		tree:add(cf.auth_nonce, buf(7 + #ts, #nonce), nonce)
		tree:add(cf.auth_hmac, buf(8 + #ts + #nonce, #hmac), hmac)
		off = line
	end
	if off < buf:len() then
		local text = buf(off):string()
		tree:add(cf.text, buf(off), text)
		local op = text:match('op%s*=%s*"([^"]*)"')
		if op then tree:add(cf.op, op) end
		pinfo.cols.info = (ts and "signed " or "") .. (op and ("command " .. op) or text:gsub("\n.*", ""))
	end
	return buf:len()
end

local udp = DissectorTable.get("udp.port")
udp:add(0xBEE0 - 1, ctrl)
for port = 0xBEE0, 0xBEEF do udp:add(port, ina) end
