"""Short texts written by hand in known languages: a few sentences each, as a team's documents and
questions read (a paragraph of a manual, a policy, a question). The detector's tests and
benchmarks/language_detectors.py read them."""

from __future__ import annotations

SAMPLES: dict[str, tuple[str, ...]] = {
    "en": (
        "The warehouse ships orders placed before noon on the same day. Orders placed later leave the next morning.",
        "How many days do I have to return a damaged item?",
        "Employees may work from home two days a week once their manager has approved the schedule.",
    ),
    "zh": (
        "本公司的退货政策规定，顾客在收到商品后三十天内可以申请退货。退货时请保留原始包装和购物凭证。",
        "员工每年享有十五天带薪年假，未休完的假期可以顺延到下一年的三月底。",
        "如何修改我的账户密码？",
        "本館藏書逾百萬冊，開放時間為每日上午九時至下午五時，週一休館。",
    ),
    "ja": (
        "当社の返品ポリシーでは、商品到着後三十日以内であれば返品を受け付けます。返品の際は元の梱包をご用意ください。",
        "社員は上司の承認を得たうえで、週に二日まで在宅勤務をすることができます。",
        "パスワードを変更するにはどうすればいいですか？",
        "東京本社は午前九時から午後六時まで営業しております。",
    ),
    "ko": (
        "당사의 반품 정책에 따르면 고객은 상품을 받은 후 30일 이내에 반품을 신청할 수 있습니다. "
        "원래 포장을 보관해 주세요.",
        "직원은 관리자의 승인을 받으면 일주일에 이틀까지 재택근무를 할 수 있습니다.",
        "비밀번호는 어떻게 변경하나요?",
    ),
    "th": (
        "ลูกค้าสามารถคืนสินค้าได้ภายในสามสิบวันหลังจากได้รับสินค้า กรุณาเก็บบรรจุภัณฑ์เดิมไว้",
        "พนักงานสามารถทำงานจากที่บ้านได้สัปดาห์ละสองวันเมื่อได้รับอนุมัติจากหัวหน้า",
        "ฉันจะเปลี่ยนรหัสผ่านได้อย่างไร",
    ),
    "hi": (
        "ग्राहक सामान मिलने के तीस दिनों के भीतर उसे वापस कर सकते हैं। कृपया मूल पैकेजिंग संभाल कर रखें।",
        "कर्मचारी अपने प्रबंधक की अनुमति से सप्ताह में दो दिन घर से काम कर सकते हैं।",
        "मैं अपना पासवर्ड कैसे बदल सकता हूँ?",
    ),
    "ar": (
        "يمكن للعملاء إرجاع المنتجات خلال ثلاثين يومًا من تاريخ الاستلام. يرجى الاحتفاظ بالعبوة الأصلية.",
        "يحق للموظفين العمل من المنزل يومين في الأسبوع بعد موافقة المدير.",
        "كيف يمكنني تغيير كلمة المرور الخاصة بي؟",
    ),
    "ru": (
        "Покупатели могут вернуть товар в течение тридцати дней после получения. Пожалуйста, сохраните упаковку.",
        "Сотрудники могут работать из дома два дня в неделю с согласия руководителя.",
        "Как мне изменить пароль от учётной записи?",
    ),
    "de": (
        "Kunden können Waren innerhalb von dreißig Tagen nach Erhalt zurückgeben. "
        "Bitte bewahren Sie die Verpackung auf.",
        "Mitarbeiter dürfen nach Zustimmung ihrer Vorgesetzten zwei Tage pro Woche von zu Hause arbeiten.",
        "Wie kann ich mein Passwort ändern?",
    ),
    "fr": (
        "Les clients peuvent retourner un article dans les trente jours suivant sa réception. "
        "Veuillez conserver l'emballage d'origine.",
        "Les employés peuvent travailler à domicile deux jours par semaine avec l'accord de leur responsable.",
        "Comment puis-je changer mon mot de passe ?",
    ),
    "es": (
        "Los clientes pueden devolver un artículo dentro de los treinta días posteriores a su recepción. "
        "Por favor, conserve el embalaje original.",
        "Los empleados pueden trabajar desde casa dos días a la semana con la aprobación de su supervisor.",
        "¿Cómo puedo cambiar mi contraseña?",
    ),
}

# Too little text to tell a language from: a detector answers "und".
UNDETERMINED = ("", "   ", "42", "OK", "v2.3.1", "https://x.io", "张", "—", "ID: 7781")
