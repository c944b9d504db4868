"""The text of the bundled Chinese sample's PDF (corpora/huanan/support/service-manual.pdf), and the
script that sets it: `.venv/bin/python -m tests.cli.huanan_pdf` writes the PDF again.

The PDF is committed; this script runs only by hand (never at install or in a test). reportlab embeds
TrueType outlines only, and Noto CJK is CFF, so it sets the text in WenQuanYi Micro Hei
(`apt-get install fonts-wqy-microhei`). The test of the sample reads the committed PDF and checks
that each paragraph and table row below is in bench's text of it, so the two cannot drift apart.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
PDF = REPO / "corpora" / "huanan" / "support" / "service-manual.pdf"
FONT = Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc")

TITLE = "售后维修服务手册"
SUBTITLE = "华南智洁科技有限公司 客户服务中心 · 2025 年第 2 版 · 适用于 RX-200、RX-300 Pro、RX-300 Max 和 DS-10"

# (kind, content): "h" a heading, "p" a paragraph, "t" a table (its rows, the first the header),
# "page" a page break.
BLOCKS: list[tuple[str, object]] = [
    (
        "p",
        "本手册面向华南智洁的售后工程师、授权服务网点和客服人员，说明寄修和上门维修的流程、"
        "保修期外的维修收费标准、维修时效以及维修后的保修规定。用户的保修权益以《产品保修政策》为准，"
        "本手册与保修政策不一致的，以保修政策为准。",
    ),
    ("h", "一、服务方式"),
    ("h2", "寄修"),
    (
        "p",
        "用户可以通过智洁家 App 或客服热线申请寄修，客服登记后安排快递上门取件；维修中心收到产品后，"
        "一般在 5 个工作日内完成维修并寄回，需要更换主板或激光雷达等部件、而库存不足的，"
        "最长不超过 10 个工作日，超出时限的须由客服主动致电说明原因。",
    ),
    (
        "p",
        "寄修前，请提醒用户取下尘盒中的垃圾和水箱中的存水，并用原包装或泡沫材料包好机器；"
        "因包装不当在运输途中造成的损坏，不属于保修范围。",
    ),
    ("h2", "上门维修"),
    (
        "p",
        "上门维修目前覆盖北京、上海、广州、深圳、杭州、南京、成都、武汉、西安、重庆等 30 个城市，"
        "完整的城市名单以 App 中的服务网点页面为准。用户提交上门申请后，服务人员会在 24 小时内"
        "电话联系并预约时间，上门服务时间为每天 9:00 至 18:00。",
    ),
    (
        "p",
        "保修期内的上门维修免收上门费；保修期外的上门维修，每次收取上门费 80 元，维修费另计。"
        "不在上门服务范围内的城市，只提供寄修服务。",
    ),
    ("page", None),
    ("h", "二、保修期外维修收费标准"),
    (
        "p",
        "下表为保修期外更换部件的收费标准，价格单位为人民币（元），已包含部件费和工时费，"
        "不含上门费；使用官方商城订单申请寄修的，往返运费由华南智洁承担。",
    ),
    (
        "t",
        [
            ["维修项目", "RX-200", "RX-300 Pro", "说明"],
            ["更换电池", "199", "299", "原装电池"],
            ["更换激光雷达模组", "260", "320", "含重新标定"],
            ["更换结构光模组", "不适用", "380", "RX-200 无此部件"],
            ["更换主板", "420", "680", "维修后须重新配网"],
            ["更换驱动轮（单侧）", "120", "150", "左右轮价格相同"],
            ["更换风机", "180", "230", "含滤网一片"],
            ["更换充电座", "99", "99", "不含 DS-10 基站"],
        ],
    ),
    (
        "p",
        "DS-10 自清洁基站在保修期外的维修，按照实际更换的部件报价，报价须经用户确认后才能维修。",
    ),
    ("h2", "检测费"),
    (
        "p",
        "保修期外的产品，检测后用户同意维修的，不收检测费；用户放弃维修的，收取检测费 30 元，"
        "回寄运费由用户承担。保修期内的产品，检测一律免费。",
    ),
    ("page", None),
    ("h", "三、维修后的保修"),
    (
        "p",
        "保修期外维修时更换的部件，自维修完成之日起享受 90 天保修；保修期内维修时更换的部件，"
        "享受整机剩余保修期或 90 天保修，以较长者为准。90 天内同一部件再次出现同样故障的，免费维修。",
    ),
    ("h", "四、备用机"),
    (
        "p",
        "上门维修无法当场修复、需要把机器带回维修中心的，保修期内的用户可以申请借用一台同型号或更高型号的备用机；"
        "备用机须在维修好的机器送回后 3 天内归还，逾期未还的，按每天 20 元收取使用费。"
        "保修期外的维修和寄修不提供备用机。",
    ),
    (
        "t",
        [
            ["服务方式", "联系用户", "完成时限"],
            ["寄修", "收到产品后 1 个工作日内", "5 个工作日，缺料时 10 个工作日"],
            ["上门维修", "申请后 24 小时内", "预约后 48 小时内上门"],
            ["上门后带回维修", "带回当天", "7 个工作日内送回"],
        ],
    ),
    ("h", "五、用户数据"),
    (
        "p",
        "为保护用户隐私，维修中心在维修完成后会把机器恢复出厂设置，清除地图、清扫记录和 Wi-Fi 配置；"
        "维修人员不得查看或导出机器中的摄像头图像。建议用户在寄修前先在 App 中解绑设备。",
    ),
    ("h", "六、投诉与回访"),
    (
        "p",
        "维修完成后 7 天内，客服中心会进行电话回访；用户对维修结果不满意的，可以拨打客服热线"
        " 400-820-3366 投诉，客服中心须在 48 小时内给出处理意见。",
    ),
]


def build(path: Path = PDF) -> None:
    """Set BLOCKS on A4 pages in WenQuanYi Micro Hei and write the PDF to ``path``."""
    from reportlab import rl_config
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.lib.units import mm
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

    if not FONT.is_file():
        sys.exit(f"{FONT} is missing: apt-get install fonts-wqy-microhei")
    rl_config.invariant = 1  # no dates or random ids in the file: the same text makes the same bytes
    pdfmetrics.registerFont(TTFont("WQY", str(FONT), subfontIndex=0))

    def style(name: str, size: float, before: float, after: float) -> ParagraphStyle:
        return ParagraphStyle(
            name,
            fontName="WQY",
            fontSize=size,
            leading=size * 1.45,
            spaceBefore=before,
            spaceAfter=after,
            wordWrap="CJK",
        )

    title, sub = style("title", 22, 0, 6), style("sub", 9, 0, 14)
    h1, h2, body = style("h1", 15, 10, 6), style("h2", 12.5, 6, 4), style("body", 10.5, 0, 6)
    cell = style("cell", 10.5, 0, 0)
    story: list = [Paragraph(TITLE, title), Paragraph(SUBTITLE, sub)]
    for kind, content in BLOCKS:
        if kind == "page":
            story.append(PageBreak())
        elif kind == "t":
            assert isinstance(content, list)
            table = Table([[Paragraph(text, cell) for text in row] for row in content], repeatRows=1)
            table.setStyle(
                TableStyle(
                    [
                        ("GRID", (0, 0), (-1, -1), 0.6, colors.black),
                        ("BACKGROUND", (0, 0), (-1, 0), colors.Color(0.9, 0.9, 0.9)),
                        ("VALIGN", (0, 0), (-1, -1), "MIDDLE"),
                    ]
                )
            )
            story += [Spacer(1, 4), table, Spacer(1, 8)]
        else:
            assert isinstance(content, str)
            story.append(Paragraph(content, {"h": h1, "h2": h2, "p": body}[kind]))
    doc = SimpleDocTemplate(
        str(path),
        pagesize=A4,
        leftMargin=25 * mm,
        rightMargin=25 * mm,
        topMargin=22 * mm,
        bottomMargin=22 * mm,
        title=TITLE,
        author="华南智洁科技有限公司",
        creator="tests/cli/huanan_pdf.py",
    )
    doc.build(story)


if __name__ == "__main__":
    build()
    print(PDF)
